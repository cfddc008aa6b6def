Feature: Synthesis: one call without tools when the loop must stop early

  Scenario: max_stuck_rounds stops a model that repeats the same calls before the round cap
    Given a lab agent with the tools "echo"
    And the lab agent config sets tool_max_rounds to 10
    And the lab agent config sets max_stuck_rounds to 2
    And the scripted model asks in one reply for
      | id | tool | args               |
      | c1 | echo | {"text": "status"} |
    And the scripted model asks in one reply for
      | id | tool | args               |
      | c2 | echo | {"text": "status"} |
    And the scripted model asks in one reply for
      | id | tool | args               |
      | c3 | echo | {"text": "status"} |
    And the scripted model then answers "giving up politely"
    When the lab agent runs
    Then synthesis ran because of "stuck" after 3 rounds
    And the last scripted model call had no tools bound
    And the run answers "giving up politely"

  Scenario: The synthesis prompt is configurable and lands in the transcript
    Given a lab agent with the tools "echo"
    And the lab agent config sets tool_max_rounds to 1
    And the lab agent config sets synthesis_prompt to "Answer now, no more tools."
    And the scripted model asks in one reply for
      | id | tool | args          | text     |
      | c1 | echo | {"text": "1"} | checking |
    And the scripted model then answers "final"
    When the lab agent runs
    Then synthesis ran because of "round_cap" after 1 rounds
    And the last scripted model call ended with the prompt "Answer now, no more tools."
    And the run answers "final"

  Scenario: Tool calls in the synthesis reply are answered, never run
    Given a lab agent with the tools "echo"
    And the lab agent config sets tool_max_rounds to 1
    And the scripted model asks in one reply for
      | id | tool | args          | text     |
      | c1 | echo | {"text": "1"} | checking |
    And the scripted model asks in one reply for
      | id   | tool | args          | text        |
      | late | echo | {"text": "2"} | one more go |
    When the lab agent runs
    Then synthesis ran because of "round_cap" after 1 rounds
    And every tool call has exactly one tool message
    And the dispatch event for "late" has reason "synthesis"
    And the run answers "one more go"
