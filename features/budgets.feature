Feature: Budgets: token and USD limits, with every token and cent accounted for

  Scenario: The token budget comes from the model profile when the config gives no window
    Given a lab agent with the tools "echo"
    And the lab agent config sets token_budget_percent to 10
    And the scripted model's profile gives a context window of 2000 tokens
    And every scripted reply reports 150 input and 60 output tokens
    And the scripted model asks in one reply for
      | id | tool | args            | text          |
      | c1 | echo | {"text": "one"} | Checking once |
    And the scripted model then answers "summary"
    When the lab agent runs
    Then the token budget is 200 tokens
    And the token budget was exhausted and synthesis ran because of "token_budget"
    And the dispatch event for "c1" has reason "token_budget"
    And the last scripted model call had no tools bound
    And the run answers "summary"

  Scenario: Spend is priced by genai-prices, call by call
    Given a lab agent with the tools "echo"
    And the scripted model is named "gpt-4o-mini"
    And every scripted reply reports 1200 input and 300 output tokens
    And the scripted model asks in one reply for
      | id | tool | args            |
      | c1 | echo | {"text": "one"} |
    And the scripted model then answers "priced"
    And a USD budget of 1 dollars
    When the lab agent runs
    Then the run answers "priced"
    And the run's cost equals genai-prices for every call made
    And the run's prompt tokens are 2400 and completion tokens 600

  Scenario: A USD budget on a model with no known price is refused before any call
    Given a lab agent with the tools "echo"
    And the scripted model is named "in-house-model"
    And the scripted model then answers "never"
    And a USD budget of 1 dollars
    When the lab agent runs
    Then the run stops with a cost error "unpriced"
    And no scripted model call was made

  Scenario: Prices given to usd_budget override genai-prices
    Given a lab agent with the tools "echo"
    And the scripted model is named "in-house-model"
    And every scripted reply reports 1000 input and 500 output tokens
    And the scripted model then answers "cheap"
    And a USD budget of 1 dollars
    And a USD price of 2 and 8 dollars per million tokens for "in-house-model"
    When the lab agent runs
    Then the run answers "cheap"
    And the run's cost is 0.006 dollars

  Scenario: Two loops under asyncio.gather never see each other's spend
    Given a lab agent with the tools "echo"
    And the scripted model is named "gpt-4o-mini"
    And every scripted reply reports 2000 input and 100 output tokens
    And the scripted model asks in one reply for
      | id | tool | args          |
      | c1 | echo | {"text": "1"} |
    And the scripted model asks in one reply for
      | id | tool | args          |
      | c2 | echo | {"text": "2"} |
    And the scripted model then answers "done"
    When two lab agents run at once, with USD budgets covering 2 and 3 calls
    Then the first run stopped with a cost error after 2 calls
    And the second run finished after 3 calls with the cost of 3 calls

  Scenario: Pruning shortens a large output, keeps the original and counts its own tokens
    Given a lab agent with the tools "fetch"
    And the lab agent config sets prune_tools to ["fetch"]
    And the lab agent config sets prune_min_chars to 100
    And a pruning model that answers "short" reporting 700 input and 9 output tokens
    And the scripted model asks in one reply for
      | id | tool  | args          |
      | f1 | fetch | {"size": 500} |
    And the scripted model then answers "pruned"
    When the lab agent runs
    Then the tool message for "f1" is exactly
      """
      short
      """
    And the tool message for "f1" keeps the original output in its artifact
    And the run's prompt tokens are 720 and completion tokens 19
    And the run answers "pruned"
