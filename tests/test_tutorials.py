"""The tutorials' stored outputs hold whatever order concurrent tool calls finish in.

Strict nbval compares every output of ``notebooks/`` with the stored one. A tool result
printed in completion order passes only as long as the threads happen to finish in the
stored order; so every kernel nbval starts runs the IPython start-up file
``reversed_finish.py``, where the calls of a reply finish in the reverse of the order they
started in, and every tutorial must still match. That is nbval's one execution of the
notebooks (``notebookkit.py``); this test reads it (run alone, it runs nbval once itself).
"""

from __future__ import annotations

import re

import pytest
from notebookkit import TutorialRun


@pytest.mark.slow
def test_every_tutorial_output_holds_when_tool_calls_finish_the_other_way_round(
    tutorial_run: TutorialRun,
) -> None:
    tutorials = {n: r for n, r in tutorial_run.notebooks.items() if re.match(r"\d\d_", n)}
    assert tutorials, "no tutorial ran"
    failed = {n: r.failures for n, r in tutorials.items() if r.failures}
    assert failed == {}, f"outputs unlike the stored ones ({tutorial_run.how}): {failed}"
    assert tutorial_run.reversed_groups > 0, "the start-up file never reordered a group of calls"
