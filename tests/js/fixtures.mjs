// Real runs for the Node tests: wire payloads Python wrote (tests/jskit.py's write_fixtures,
// run by tests/widget/test_widget_node.py), one <case>.json per run, in $TOOLLOOP_JS_FIXTURES.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const SRC = new URL("../../toolloop_lab/_widget/src/", import.meta.url);

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

/**
 * Wait `ms` (a draw starts on the next frame), then until no debugger on the page is in the
 * middle of a draw: a draw cut into slices goes on in later tasks, and marks its root
 * `data-drawing` until it ends.
 * @param {number} [ms]
 */
export async function settled(ms = 60) {
  await new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 400 && globalThis.document && document.querySelector(".tl-root[data-drawing]"); i++) await new Promise((r) => setTimeout(r, 5));
}
