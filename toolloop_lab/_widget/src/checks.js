// @ts-check
// What the checks a person gave the debugger say (Python judges them: _widget/checked.py,
// each run row carrying its mark): the run list's mark, the rounds a failed check's
// evidence names, and "Save as test" (Python writes the files). No state of its own.

import { button, dot, h } from "./dom.js";
import { plural, visible } from "./format.js";
import { isDone } from "./run.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./store.js").Store} Store */

/**
 * @typedef {object} CheckFailure one failed check, as its evidence names it
 * @property {string} check the check as written (`max_tool_rounds(3)`)
 * @property {number | null} round the round the evidence names (null: the run as a whole)
 * @property {string} expected
 * @property {string} seen
 */

/**
 * @typedef {object} CheckMark a run's check result (RunRow.checks; null: not judged)
 * @property {boolean} passed
 * @property {number} total
 * @property {number} failed
 * @property {CheckFailure[]} failures the first failures (at most 20)
 */

/**
 * One failure in words, as a tooltip line.
 * @param {CheckFailure} f
 * @returns {string}
 */
export function failureWords(f) {
  return `${f.check}: expected ${f.expected}; seen ${f.seen}`;
}

/**
 * The run list's mark for a row's check result; null for a run no checks judged.
 * @param {{checks?: CheckMark | null}} row
 * @returns {HTMLElement | null}
 */
export function checkMark(row) {
  const m = row.checks;
  if (!m) return null;
  const text = m.passed ? `${m.total}/${m.total} checks` : `${m.failed}/${m.total} checks failed`;
  const mark = h("span", `tl-chip tl-check ${m.passed ? "tl-check-pass" : "tl-chip-error"}`, dot(m.passed ? "answer" : "error"), text);
  mark.title = visible(m.passed ? `Every check passed (${plural(m.total, "check")})` : m.failures.map(failureWords).join("\n"));
  return mark;
}

/**
 * The failed checks whose evidence names round `n` of the run shown.
 * @param {Store} s
 * @param {number} n
 * @returns {CheckFailure[]}
 */
export function failuresAt(s, n) {
  const row = s.run.runId ? s.runs.get(s.run.runId) : undefined;
  const m = row ? row.checks : null;
  if (!m || m.passed) return [];
  return m.failures.filter((f) => f.round === n);
}

/**
 * A round's mark when a failed check's evidence names it; null otherwise.
 * @param {Store} s
 * @param {number} n
 * @returns {HTMLElement | null}
 */
export function roundCheckMark(s, n) {
  const failed = failuresAt(s, n);
  if (!failed.length) return null;
  const mark = h("span", "tl-chip tl-chip-error tl-check", dot("error"), failed.length === 1 ? "check failed" : `${failed.length} checks failed`);
  mark.title = visible(failed.map(failureWords).join("\n"));
  return mark;
}

/**
 * "Save as test": the run shown, written by Python as a test file and its recording.
 * @param {ViewContext} ctx
 */
export function createSaveTest(ctx) {
  const { s, host } = ctx;
  const saveBtn = button("Save as test", null, () => save(), "Write this run's recording and a test file whose checks are read off it (tests/ under the notebook's folder)");
  const saveMsg = h("div", "tl-fork-msg");
  saveMsg.setAttribute("role", "status");
  /** @type {{runId: string, state: string, text: string} | null} */
  let said = null;

  function save() {
    const runId = s.run.runId;
    if (!runId) return;
    said = { runId, state: "idle", text: "Saving as a test…" };
    saveBtn.disabled = true;
    draw();
    ctx.ask({ type: "save_test", run_id: runId }, (a) => {
      said = a.ok ? { runId, state: "ok", text: `Saved: ${a.message}.` } : { runId, state: "error", text: `Cannot save it as a test (${a.reason}): ${a.message}` };
      ctx.redraw(true);
    });
  }

  function draw() {
    // a kernel-backed widget showing a finished run of its own (a saved page has no kernel)
    saveBtn.hidden = !(host.forking && isDone(s.run) && s.run.runId) || s.source === "saved";
    saveBtn.disabled = !!(said && said.state === "idle");
    saveMsg.textContent = "";
    saveMsg.hidden = !(said && said.runId === s.run.runId);
    if (said && !saveMsg.hidden) saveMsg.append(dot(said.state === "error" ? "error" : said.state === "ok" ? "answer" : "idle"), h("span", null, visible(said.text)));
  }

  return { nodes: { saveBtn, saveMsg }, draw };
}
