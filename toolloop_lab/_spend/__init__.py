"""What a run spends: token usage, prices (genai-prices plus overrides) and the USD budget."""
