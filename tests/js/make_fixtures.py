"""Write the Node tests' fixtures: ``python tests/js/make_fixtures.py DIR`` (then run
``TOOLLOOP_JS_FIXTURES=DIR node --test tests/js/``).
``tests/widget/test_widget_node.py`` does both."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: loopkit, jskit

from jskit import write_fixtures

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/js/make_fixtures.py DIR")
    print("\n".join(write_fixtures(Path(sys.argv[1]))))
