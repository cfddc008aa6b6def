"""What the page keeps of a long run: a yardstick for its garbage collector's pauses.

Run: ``python benchmarks/bench_page_heap.py`` (Node 20; a few seconds), or with
``--against DIR`` (another checkout's ``toolloop_lab/_widget/src``) to put its figures beside
this checkout's, alternated ``--repeats`` times. It feeds the 10,000-round run the throttled
browser test streams (``tests/browser/streams.py``'s ``long_run``, as wire payloads) to the
page's fold and the timeline's cache in Node (``page_heap.mjs``), and prints the heap they
keep, the objects a round (the rounds and the timeline's cache; the conversation's messages
apart), and the median pause of V8's full collection with that heap. On the page, under
chromium's 4x throttling, such a collection was the longest task of a long run
(``bench_browser.py``): its pause grows with what the page keeps. Byte and object counts are
the same from run to run; the pause moves with the machine's load.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "toolloop_lab" / "_widget" / "src"
SCRIPT = Path(__file__).resolve().parent / "page_heap.mjs"


def write_payloads(folder: Path, rounds: int) -> Path:
    """The long run's wire payloads, as the page gets them, in ``folder``."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from browser.streams import long_run

    from toolloop_lab._widget.wire import event_payload

    path = folder / "long_run.json"
    payloads = [event_payload(e, 4_000) for e in long_run(rounds)]
    path.write_text(json.dumps(payloads, ensure_ascii=False), encoding="utf-8")
    return path


def measure(src: Path, payloads: Path) -> dict[str, Any]:
    """One fresh Node process's figures for the sources in ``src``."""
    node = shutil.which("node")
    if node is None:
        sys.exit("node is not installed (Node 20)")
    out = subprocess.run(
        [node, "--expose-gc", str(SCRIPT), str(src), str(payloads)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, Any] = json.loads(out.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout's widget/src")
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sources = {"this checkout": SRC}
    if args.against:
        sources["--against"] = args.against.resolve()
    with tempfile.TemporaryDirectory(prefix="bench_page_heap_") as tmp:
        payloads = write_payloads(Path(tmp), args.rounds)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sources}
        for _ in range(args.repeats):
            for name, src in sources.items():
                runs[name].append(measure(src, payloads))
    print(f"node, {args.rounds:,}-round run folded with the timeline's cache, {args.repeats} runs")
    for name, figures in runs.items():
        first = figures[0]
        pause = statistics.median(f["full_gc_ms"] for f in figures)
        print(
            f"{name:<14} kept {first['kept_mb']:.1f} MB ({first['bytes_per_round']:,.0f} B a "
            f"round), {first['objects_per_round']:.1f} objects a round "
            f"(+{first['conversation_objects_per_round']:.1f} in the conversation), "
            f"full collection {pause:.1f} ms"
        )


if __name__ == "__main__":
    main()
