"""The loop engine: ``LLMAgent`` and the tool loop it drives, its config, model calls, pause points,
interventions and pruning. Imports no UI, pandas or matplotlib."""
