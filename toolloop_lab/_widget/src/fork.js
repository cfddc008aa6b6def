// @ts-check
// Forking: the "Fork from here" button and what Python answered (and "Save as test" beside
// it, checks.js), and on a fork's own debugger where it came from (the two runs side by side at its end are compare.js's).

import { createSaveTest } from "./checks.js";
import { button, dot, h } from "./dom.js";
import { count } from "./format.js";
import { isDone } from "./run.js";
import { roundTitle, selectedRound } from "./rounds.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */

/** @type {Readonly<Record<string, string>>} */
const FROM = { result: "a run", events: "a run", trace: "a trace", recording: "a recording" };

/**
 * @param {ViewContext} ctx
 */
export function createFork(ctx) {
  const { s, host } = ctx;
  const forkBtn = button("Fork from here", null, () => forkHere(), "Run this run again from the selected round, in a new debugger below");
  const forkMsg = h("div", "tl-fork-msg");
  forkMsg.setAttribute("role", "status");
  const forkBox = h("div", "tl-forkbox");
  const saving = createSaveTest(ctx); // "Save as test" sits beside "Fork from here"

  function forkHere() {
    const r = selectedRound(s);
    if (!r) return;
    s.ui.forkMsg = { n: r.n, state: "idle", text: `Forking at ${roundTitle(s, r).toLowerCase()}…` };
    forkBtn.disabled = true;
    drawForkMsg();
    ctx.ask({ type: "fork", round: r.n }, (a) => {
      s.ui.forkMsg = a.ok ? { n: r.n, state: "ok", text: `Forked at ${roundTitle(s, r).toLowerCase()}: ${a.message}.` } : { n: r.n, state: "error", text: `Cannot fork here (${a.reason}): ${a.message}` };
      ctx.redraw(true);
    });
  }

  function drawForkMsg() {
    const r = selectedRound(s);
    const m = s.ui.forkMsg;
    forkMsg.textContent = "";
    forkMsg.hidden = !(m && r && m.n === r.n);
    if (m && !forkMsg.hidden) forkMsg.append(dot(m.state === "error" ? "error" : m.state === "ok" ? "answer" : "idle"), h("span", null, m.text));
  }

  function draw() {
    // "Fork from here": on a finished (or replayed) run shown by a kernel-backed widget
    const can = !!host.canFork();
    const r = selectedRound(s);
    forkBtn.hidden = !(host.forking && isDone(s.run) && r) || s.source === "saved"; // no kernel to fork with
    forkBtn.disabled = !can || !!(s.ui.forkMsg && s.ui.forkMsg.state === "idle");
    forkBtn.title = can ? "Run this run again from the selected round, in a new debugger below" : "This debugger knows no agent to fork with: open it with LoopDebugger.from_trace(path, fork_with=agent)";
    drawForkMsg();
    saving.draw();
    // a fork's own debugger: where it came from
    const info = s.forkInfo;
    forkBox.textContent = "";
    forkBox.hidden = !info || info.at_round === undefined;
    if (forkBox.hidden) return;
    const from = FROM[info.source] || "a run";
    forkBox.append(h("div", null, h("span", "tl-strong", `Fork of ${from} at round ${count(info.at_round)}.`), " ", h("span", "tl-meta", `Rounds before it were taken from the original; rounds are numbered as in the original.`)));
  }

  return { nodes: { forkBtn, forkMsg, forkBox, ...saving.nodes }, draw };
}
