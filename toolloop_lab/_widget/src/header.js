// @ts-check
// The view's head: the status badge, title and round count, the run's elapsed time, what
// happens now (or how the run ended), Python's note, the totals and the budget gauges.

import { dot, h } from "./dom.js";
import { capitalized, clip, count, duration, pct, plural, tokens, visible } from "./format.js";
import { isDone, outcomeText } from "./run.js";
import { roundsRun, roundsSaid } from "./counts.js";
import { lastToolName } from "./rounds.js";
import { QUESTION_CHARS, firstUserText, runQuestion } from "./question.js";
import { nestedCount } from "./run_rows.js";
import { held, holdingNow, runNow } from "./store.js";
import { budgetStop, overshoot } from "./budget.js";
import { GATE_NAME, STATUS, USAGE, statusCode, usd, word } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */

/** @type {Readonly<Record<string, string>>} */

/**
 * @param {ViewContext} ctx
 */
export function createHeader(ctx) {
  const s = ctx.s;
  const badge = h("span", "tl-badge");
  const title = h("span", "tl-title");
  const question = h("span", "tl-question");
  const roundsInfo = h("span", "tl-meta");
  const elapsed = h("span", "tl-meta tl-num");
  const head = h("div", "tl-head", badge, title, question, roundsInfo, h("span", "tl-grow"), elapsed);
  let askedKey = "";
  /** @type {string | null} */
  let asked = null;

  /**
   * The run's question, looked for again only while the conversation grows without one; at
   * a pause before the first call, in what that call is about to send (all of it held).
   */
  function drawQuestion() {
    const run = s.run;
    const p = s.control.paused_at;
    const pending = p && Array.isArray(p.messages) && !(p.message_count > p.messages.length) ? p.messages : null;
    const key = `${run.runId}:${asked === null ? `${run.conversation.length}:${pending ? pending.length : -1}` : "found"}`;
    if (key === askedKey) return;
    if (asked === null) {
      asked = runQuestion(run);
      if (asked === null && pending && !run.conversation.length) {
        const text = firstUserText(pending);
        asked = text === null ? null : clip(text, QUESTION_CHARS);
      }
    }
    askedKey = asked === null ? key : `${run.runId}:found`;
    question.textContent = asked === null ? "" : visible(asked);
    question.title = asked === null ? "" : visible(`asked: ${asked}`);
    question.hidden = asked === null;
  }
  const activity = h("div", "tl-activity");
  activity.setAttribute("aria-live", "polite");
  const note = h("div", "tl-note");
  const totals = h("div", "tl-totals");
  const gauges = h("div", "tl-gauges");

  function draw() {
    const run = s.run;
    const st = run.status;
    let state = statusCode(st, run.outcome);
    if (st === "running" && s.control.paused_at) state = "paused";
    if (st === "finished" && run.outcome === "interrupted") state = "interrupted"; // a LangGraph interrupt(): waits for input
    badge.textContent = "";
    const badgeState = state === "finished" ? "answer" : state === "failed" ? "error" : state === "cancelled" ? "stopped" : state === "paused" || state === "interrupted" || state === "usd_budget_exhausted" ? "warn" : state === "running" ? "running" : "idle";
    badge.append(dot(badgeState), h("span", null, capitalized(word(STATUS, state))));
    badge.className = `tl-badge tl-b-${badgeState}`;
    const info = run.run;
    title.textContent = info ? visible([info.name, info.model].filter(Boolean).join(" · ")) || "agent run" : "";
    if (askedKey && !askedKey.startsWith(`${run.runId}:`)) asked = null; // another run
    drawQuestion();
    const rounds = run.rounds;
    let ri = roundsSaid(run, s.offset || 0) || (rounds.length ? plural(roundsRun(run) + s.omitted, "round") : "");
    if (!isDone(run) && rounds.length && rounds[rounds.length - 1].purpose === "synthesis") ri += " + final answer call";
    roundsInfo.textContent = ri;
    ctx.live.length = 0;
    const elapsedText = () => {
      if (run.status === "idle") return "";
      // the run's own time: what pauses held it is a person's time, shown on its own
      const held = run.paused + holdingNow(s);
      const own = isDone(run) ? `took ${duration(run.lastT - held)}` : `elapsed ${duration(runNow(s) - held)}`;
      return run.pauses || (s.control.paused_at && !isDone(run)) ? `${own} · paused ${duration(held)}` : own;
    };
    elapsed.textContent = elapsedText();
    ctx.live.push([elapsed, elapsedText]);
    activity.textContent = "";
    activity.title = "";
    activity.className = "tl-activity";
    drawActivity();
    note.textContent = visible(s.control.note || "");
    note.hidden = !s.control.note;
    drawTotals();
  }

  function drawActivity() {
    const run = s.run;
    if (run.status === "idle") {
      activity.append(h("span", "tl-muted", "Display this, then run the agent (or start it with dbg.start(agent, prompt))."));
      return;
    }
    if (isDone(run)) {
      let text = budgetStop(run, s.offset || 0) || outcomeText(run) || run.outcome || "";
      if (run.status === "cancelled" && s.control.stopped_by_user) text = "Stopped by you";
      const finish = run.finish;
      if (finish && finish.final_text !== undefined) {
        // one line of text that wraps as prose: at a narrow width the answer still shows
        const said = finish.final_text ? h("span", "tl-final", clip(finish.final_text, 300)) : h("span", "tl-muted", "(no text)");
        activity.append(h("span", null, h("span", "tl-strong", `${text}: `), said));
      } else {
        activity.append(h("span", "tl-strong", text));
      }
      activity.title = visible(text); // the line is two rows high: all of it on hover
      return;
    }
    const last = run.rounds[run.rounds.length - 1];
    /** @type {[string, () => string][]} */
    const items = [];
    if (s.control.paused_at) items.push(["warn", () => "waiting for you: Step, Continue or Stop"]);
    if (last) {
      const c = last.call;
      if (c && !c.done && c.t0 !== null && !c.interrupted && !held(s, c)) {
        items.push(["running", () => `${c.purpose === "synthesis" ? "asking for the final answer from" : "calling"} ${c.model || "the model"}… ${duration(runNow(s) - (c.t0 || 0))}`]);
      }
      for (const p of last.prunings) if (!p.done && p.t0 !== null) items.push(["running", () => `pruning a ${lastToolName(last, p.toolCallId)} output… ${duration(runNow(s) - p.t0)}`]);
      for (const t of last.tools) if (t.status === "running") items.push(["running", () => `running ${t.name}… ${duration(runNow(s) - (t.tStart || 0))}`]);
      const queued = last.tools.filter((t) => t.status === "queued").length;
      if (queued && !last.tools.some((t) => t.status === "running")) items.push(["idle", () => `${plural(queued, "tool call")} waiting to run`]);
    }
    if (!items.length) items.push(["idle", () => "working…"]);
    for (const [state, fn] of items) {
      const span = h("span", "tl-act-item");
      const txt = h("span", "tl-num", fn());
      span.append(dot(state), txt);
      ctx.live.push([txt, fn]);
      activity.append(span);
    }
  }

  /**
   * @param {string} label
   * @param {number} spent
   * @param {number} limit
   * @param {(n: number) => string} fmt
   * @param {string} state
   * @param {string} explain
   */
  function gauge(label, spent, limit, fmt, state, explain) {
    const frac = limit ? spent / limit : null;
    const bar = h("span", "tl-bar");
    const fill = h("span", `tl-fill tl-g-${state}`);
    fill.style.width = `${Math.min(100, Math.max(0, (frac || 0) * 100)).toFixed(1)}%`;
    bar.append(fill);
    bar.setAttribute("aria-hidden", "true");
    const g = h("div", "tl-gauge", h("span", "tl-gauge-label", label), bar, h("span", "tl-num", limit ? `${fmt(spent)} of ${fmt(limit)} (${pct(frac)})` : fmt(spent)));
    if (state !== "off") g.append(h("span", `tl-gate tl-gate-${state}`, state === "tripped" ? "limit reached" : "within limit"));
    // over 100 %: said beside the figure, not only in a tooltip
    const over = state === "off" ? null : overshoot(spent, limit);
    if (over) g.append(h("span", "tl-gauge-over tl-meta", over));
    if (explain) g.title = over ? `${explain}; ${over}` : explain;
    gauges.append(g);
  }

  let nestedKey = "";
  let nestedN = 0;
  /**
   * How many runs are nested under `runId`, counted again only when the rows changed.
   * @param {string} runId
   * @returns {number}
   */
  function nestedUnder(runId) {
    const key = `${s.runsVersion}:${runId}`;
    if (key !== nestedKey) {
      nestedKey = key;
      nestedN = nestedCount(s.runs, runId);
    }
    return nestedN;
  }

  function drawTotals() {
    const run = s.run;
    const t = run.totals;
    totals.textContent = "";
    /** @type {(label: string, value: string, sub?: string | null) => HTMLElement} */
    const item = (label, value, sub) => h("span", "tl-total", h("span", "tl-total-label", label), h("span", "tl-total-value tl-num", value), sub ? h("span", "tl-total-sub tl-num", sub) : null);
    totals.append(item("input", `${tokens(t.input)} tokens`, t.cacheRead ? `${tokens(t.cacheRead)} from cache` : "none from cache"));
    totals.append(item("output", `${tokens(t.output)} tokens`));
    /** @type {string | null} */
    let split = null;
    if (t.costIn !== null || t.costOut !== null) split = `input ${usd(t.costIn)} · output ${usd(t.costOut)}`;
    totals.append(item("cost", usd(t.cost), split));
    // a run that called nested runs: what it spent with them (their rows say)
    const row = run.runId !== null ? s.runs.get(run.runId) : undefined;
    const under = row ? nestedUnder(row.run_id) : 0;
    if (row && under) {
      const all = `${tokens(row.total_input_tokens + row.total_output_tokens)} tokens, ${usd(row.total_cost_usd)}`;
      const nestedItem = item(`with ${plural(under, "nested run")}:`, all, `input ${tokens(row.total_input_tokens)} · output ${tokens(row.total_output_tokens)}`);
      nestedItem.classList.add("tl-total-nested");
      nestedItem.title = "This run's spend with every run it called (sub-agents), as far as this debugger kept them";
      totals.append(nestedItem);
    }
    if (t.estimated) {
      // the Python views say it on the same condition (figures.py's estimated)
      const said = h("span", "tl-muted tl-total-estimated", USAGE.estimated);
      said.title = USAGE.estimated_hint;
      totals.append(said);
    }
    gauges.textContent = "";
    const info = run.run;
    if (!info) return;
    if (info.tokenBudget !== null && info.tokenBudget !== undefined) gauge("token budget", t.input + t.output, info.tokenBudget, tokens, run.tokenGate, "Tokens spent by every call (input + output) against the run's token budget");
    if (info.usdLimit !== null && info.usdLimit !== undefined) gauge(GATE_NAME.usd, t.cost || 0, info.usdLimit, usd, run.usdGate, "Cost so far against the USD limit");
    if (info.contextWindow) gauge("context", run.lastContext, info.contextWindow, tokens, "off", "Input tokens of the latest model call against the context window");
  }

  return { nodes: { head, activity, note, totals, gauges }, draw };
}
