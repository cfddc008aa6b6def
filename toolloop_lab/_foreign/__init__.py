"""Runs of agents we did not write, told as the loop's typed events.

``run.py`` holds :class:`~.run.ForeignRun`, the one lifecycle of a run seen from outside
(start, model calls, tools, the conversation carried, the end) with the one rule for
matching a result to its call (its module docstring). Two adapters feed it: ``langchain.py``
(:class:`~toolloop_lab.EventBridge`, langchain-core callbacks; ``watch.py`` gives one to
every run of a block) and ``spans.py`` (:class:`~toolloop_lab.otel.SpanSource`,
OpenTelemetry GenAI spans, read by ``conventions.py``). ``conversation.py`` finds what a
prompt holds that no event carried yet. Private: the public names are the package root's
and ``toolloop_lab.otel``'s.
"""
