Feature: Tool dispatch: every tool call of a reply gets exactly one answer

  The tool calls of one reply run concurrently, their answers go back in call order, and
  every failure is an error tool message the model can read; the loop goes on.

  Scenario: Tool calls of one reply run concurrently
    Given a lab agent with the tools "ping, pong"
    And the scripted model asks in one reply for
      | id | tool | args |
      | a  | ping | {}   |
      | b  | pong | {}   |
    And the scripted model then answers "both answered"
    And the lab agent config sets tool_timeout_s to 30
    When the lab agent runs
    Then the tool message for "a" contains "ping saw pong"
    And the tool message for "b" contains "pong saw ping"
    And the run answers "both answered"

  Scenario: Answers are appended in call order, not in completion order
    Given a lab agent with the tools "slow_first, fast_second"
    And the scripted model asks in one reply for
      | id     | tool        | args |
      | first  | slow_first  | {}   |
      | second | fast_second | {}   |
    And the scripted model then answers "ordered"
    When the lab agent runs
    Then the tools finished in the order "fast_second, slow_first"
    And the tool messages answer "first, second" in that order

  Scenario: Every kind of failure becomes an error tool message and the loop goes on
    Given a lab agent with the tools "echo, add, explode"
    And the scripted model asks in one reply for
      | id      | tool    | args                    |
      | ok      | add     | {"a": 2, "b": 3}        |
      | ghost   | search  | {"q": "x"}              |
      | typo    | echo    | {"txt": "hi"}           |
      | broken  | explode | {"reason": "disk full"} |
      | garbled | echo    | {"text": oops}          |
    And the scripted model then answers "recovered"
    When the lab agent runs
    Then every tool call has exactly one tool message
    And the tool message for "ok" has status "success"
    And the tool message for "ok" contains "5"
    And the tool message for "ghost" has status "error"
    And the tool message for "ghost" contains "not available"
    And the tool message for "ghost" contains "Available tools: add, echo, explode"
    And the dispatch event for "ghost" has reason "not_available"
    And the dispatch event for "typo" has reason "invalid_arguments"
    And the tool message for "typo" contains "text: Field required"
    And the dispatch event for "broken" has reason "tool_error"
    And the tool message for "broken" contains "RuntimeError: disk full"
    And the dispatch event for "garbled" has reason "invalid_call"
    And the run answers "recovered"

  Scenario: Non-string results reach the model as deterministic JSON
    Given a lab agent with the tools "report"
    And the scripted model asks in one reply for
      | id | tool   | args |
      | r  | report | {}   |
    And the scripted model then answers "reported"
    When the lab agent runs
    Then the tool message for "r" has status "success"
    And the tool message for "r" is exactly
      """
      {"alpha": "0.10", "day": "2024-01-02", "zeta": [1, 2, 3]}
      """
