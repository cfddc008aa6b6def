// Real runs for the Node tests: wire payloads Python wrote (tests/jskit.py's write_fixtures,
// run by tests/widget/test_widget_node.py), one <case>.json per run, in $TOOLLOOP_JS_FIXTURES.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const SRC = new URL("../../toolloop_lab/widget/src/", import.meta.url);

/** The URL of a source module of the front end. */
export const src = (name) => new URL(name, SRC).href;

/** The wire payloads of run `name` (a catalog scenario or a hostile case). */
export function loadCase(name) {
  const folder = process.env.TOOLLOOP_JS_FIXTURES;
  if (!folder) {
    throw new Error(
      "TOOLLOOP_JS_FIXTURES is not set: run `pytest tests/widget/test_widget_node.py`, or " +
        "`python tests/js/make_fixtures.py DIR` and set TOOLLOOP_JS_FIXTURES=DIR",
    );
  }
  const file = join(folder, `${name}.json`);
  if (!existsSync(file)) throw new Error(`no fixture ${file}`);
  return JSON.parse(readFileSync(file, "utf8"));
}
