Feature: Events: one typed stream for everything a user sees

  Scenario: A plain run emits its events in order, and each survives JSON
    Given a lab agent with the tools "echo"
    And the scripted model asks in one reply for
      | id | tool | args           |
      | c1 | echo | {"text": "hi"} |
    And the scripted model then answers "done"
    When the lab agent runs
    Then the event kinds are, in order
      | kind             | round |
      | loop_start       | 0     |
      | round_start      | 1     |
      | model_call_start | 1     |
      | model_call       | 1     |
      | tool_start       | 1     |
      | tool_dispatch    | 1     |
      | round_start      | 2     |
      | model_call_start | 2     |
      | model_call       | 2     |
      | loop_finish      | 2     |
    And every event survives a JSON round trip
    And the observers saw exactly the events the run returned

  Scenario: An observer that raises never breaks the loop
    Given a lab agent with the tools "echo"
    And an observer that raises on every event
    And the scripted model asks in one reply for
      | id | tool | args           |
      | c1 | echo | {"text": "hi"} |
    And the scripted model then answers "still done"
    When the lab agent runs
    Then the run answers "still done"
    And the observers saw exactly the events the run returned
    And every observer failure was logged as a warning

  Scenario: A failed run keeps the same event stream on its error
    Given a lab agent with the tools "echo"
    And the scripted model asks in one reply for
      | id | tool | args           |
      | c1 | echo | {"text": "hi"} |
    And the scripted model then fails with "provider exploded"
    When the lab agent runs
    Then the run failed with a ToolLoopError caused by "RuntimeError"
    And the observers saw exactly the events the error carries
    And the last event is a loop failure that was not cancelled
    And every event survives a JSON round trip

  Scenario: Cancelling a run answers its open tool calls and emits a final event
    Given a lab agent with the tools "wait_forever"
    And the scripted model asks in one reply for
      | id | tool         | args |
      | w1 | wait_forever | {}   |
    When the lab agent run is cancelled while "wait_forever" is running
    Then the run was cancelled
    And the dispatch event for "w1" says its tool was stopped while running
    And the last event is a loop failure that was cancelled
