// @ts-check
// A round's waterfall: one bar per call and tool on the round's own time axis; the time a
// pause held the loop is a bar of its own, where it held it (before the call, the tools or
// pruning). Open bars grow with the run's clock.

import { h } from "./dom.js";
import { duration } from "./format.js";
import { isDone } from "./run.js";
import { lastToolName, notRunLabel, roundEnd } from "./rounds.js";
import { held, runNow } from "./store.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */

/**
 * @typedef {object} Span one bar
 * @property {string} label
 * @property {string} kind model, tool, error, stopped, prune, paused or notrun
 * @property {() => number | null | undefined} t0
 * @property {() => number | null | undefined} t1
 * @property {() => boolean} [open] still growing
 * @property {string | null} [note] said instead of a bar
 * @property {string} [suffix] after its duration
 */

/**
 * @param {ViewContext} ctx
 * @param {Round} r
 * @returns {Span[]}
 */
function spansOf(ctx, r) {
  const s = ctx.s;
  /** @type {Span[]} */
  const spans = [];
  const now = () => runNow(s);
  /** @param {any} p */
  const before = (p) => (p.stage === "tool_dispatch" ? "tools" : p.purpose === "pruning" ? "pruning" : "call");
  const waiting = s.control.paused_at;
  const holdsHere = !!waiting && !isDone(s.run) && waiting.round === r.n && typeof s.control.paused_since === "number";
  /** @param {string} where */
  const pausesBefore = (where) => {
    for (const p of r.pauses) if (before(p) === where) spans.push({ label: "paused", kind: "paused", t0: () => p.t0, t1: () => p.t1 });
    if (holdsHere && before(waiting) === where) spans.push({ label: "paused", kind: "paused", t0: () => s.control.paused_since, t1: now, open: () => true });
  };
  pausesBefore("call");
  if (r.call) {
    const c = r.call;
    const label = r.purpose === "synthesis" ? "final-answer call" : "model call";
    if (held(s, c)) spans.push({ label, kind: "notrun", t0: () => null, t1: () => null, note: "not sent yet" });
    else spans.push({ label, kind: "model", t0: () => c.t0, t1: () => (c.t1 !== null ? c.t1 : c.interrupted ? s.run.lastT : now()), open: () => !c.done && !c.interrupted });
  }
  pausesBefore("tools");
  for (const t of r.tools) {
    if (!t.ran || t.status === "not_run") {
      spans.push({ label: t.name, kind: "notrun", t0: () => null, t1: () => null, note: notRunLabel(t) });
      continue;
    }
    const kind = t.status === "error" ? "error" : t.status === "cancelled" ? "stopped" : "tool";
    spans.push({ label: t.name, kind, t0: () => t.tStart, t1: () => (t.tEnd !== null ? t.tEnd : t.tStart !== null ? now() : null), open: () => t.status === "running", note: t.status === "queued" ? "waiting to run" : null, suffix: t.status !== "cancelled" ? "" : t.reason === "interrupted" ? " waiting for input" : " stopped" });
  }
  pausesBefore("pruning");
  for (const p of r.prunings) spans.push({ label: `pruning ${lastToolName(r, p.toolCallId)}`, kind: "prune", t0: () => p.t0, t1: () => (p.t1 !== null && p.t1 !== undefined ? p.t1 : p.interrupted ? s.run.lastT : now()), open: () => !p.done && !p.interrupted });
  for (const c of r.summaries) spans.push({ label: "summarizing the conversation", kind: "model", t0: () => c.t0, t1: () => (c.t1 !== null ? c.t1 : c.interrupted ? s.run.lastT : now()), open: () => !c.done && !c.interrupted });
  return spans;
}

/**
 * @param {ViewContext} ctx
 * @param {Round} r
 * @returns {HTMLElement}
 */
export function waterfall(ctx, r) {
  const s = ctx.s;
  const box = h("div", "tl-wf");
  const spans = spansOf(ctx, r);
  if (!spans.length) return box;
  const waiting = s.control.paused_at;
  const holdsHere = !!waiting && !isDone(s.run) && waiting.round === r.n && typeof s.control.paused_since === "number";
  /** @type {[Span, HTMLElement, HTMLElement][]} */
  const lines = [];
  for (const sp of spans) {
    const bar = h("span", `tl-wf-bar tl-wf-${sp.kind}`);
    bar.setAttribute("aria-hidden", "true");
    const track = sp.kind === "notrun" ? h("span", "tl-wf-none tl-muted", sp.note || "not run") : h("span", "tl-wf-track", bar);
    const label = h("span", "tl-wf-dur tl-num");
    lines.push([sp, bar, label]);
    box.append(h("div", "tl-wf-line", h("span", "tl-wf-name", sp.label), track, label));
  }
  const axis = h("div", "tl-wf-axis tl-meta tl-num");
  box.prepend(axis);
  const paint = () => {
    const start = r.t0 !== null ? r.t0 : 0;
    let end = start;
    for (const [sp] of lines) {
      const b = sp.t1();
      if (b !== null && b !== undefined) end = Math.max(end, b);
    }
    end = Math.max(end, roundEnd(s, r));
    const span = Math.max(end - start, 1e-6);
    const paused = r.paused + (holdsHere ? Math.max(0, runNow(s) - /** @type {number} */ (s.control.paused_since)) : 0);
    const extra = r.pauses.length || holdsHere ? `, plus ${duration(paused)} paused` : "";
    axis.textContent = `Round took ${duration(end - start - paused)}${extra}; bars on one time axis`;
    for (const [sp, bar, label] of lines) {
      const a = sp.t0();
      const b = sp.t1();
      if (a === null || a === undefined || b === null || b === undefined) {
        bar.style.left = "0";
        bar.style.width = "0";
        label.textContent = "—";
        continue;
      }
      bar.style.left = `${(((a - start) / span) * 100).toFixed(2)}%`;
      bar.style.width = `${Math.max(0.5, ((b - a) / span) * 100).toFixed(2)}%`;
      bar.classList.toggle("tl-wf-open", !!(sp.open && sp.open()));
      label.textContent = duration(b - a) + (sp.open && sp.open() ? " so far" : sp.suffix || "");
    }
  };
  paint();
  ctx.liveDetail.push([box, paint]);
  return box;
}
