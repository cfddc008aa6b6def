"""Record, replay, what-if, fork and compare: re-running a run with one thing changed."""
