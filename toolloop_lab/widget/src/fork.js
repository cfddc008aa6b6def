// @ts-check
// Forking: the "Fork from here" button and what Python answered, and on a fork's own
// debugger where it came from and the two runs side by side at its end.

import { block, button, dot, h } from "./dom.js";
import { count, plural, tokens } from "./format.js";
import { isDone } from "./run.js";
import { roundTitle, selectedRound } from "./rounds.js";
import { OUTCOME, SYNTH, usd } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */

/** @type {Readonly<Record<string, string>>} */
const FROM = { result: "a run", events: "a run", trace: "a trace", recording: "a recording" };

/**
 * @param {number | null | undefined} v
 * @param {(n: number) => string} fmt
 * @returns {string}
 */
function delta(v, fmt) {
  return v === null || v === undefined ? "—" : `${v > 0 ? "+" : v < 0 ? "−" : "±"}${fmt(Math.abs(v))}`;
}

/**
 * The fork next to the original: totals, then round by round (Python's comparison).
 * @param {any} c
 * @returns {HTMLElement}
 */
export function comparisonView(c) {
  const cost = usd;
  const box = h("div");
  const totals = h("table", "tl-cmp tl-num");
  /** @type {(cells: (string | Node)[], head?: boolean) => HTMLElement} */
  const row = (cells, head) => h("tr", null, ...cells.map((x) => h(head ? "th" : "td", null, x)));
  const o = c.original;
  const f = c.fork;
  /** @param {any} x */
  const outcome = (x) => (OUTCOME[x.outcome] || x.outcome) + (x.reason ? ` (${SYNTH[x.reason] || x.reason})` : "");
  totals.append(
    row(["", "original", "fork", "change"], true),
    row(["outcome", outcome(o), outcome(f), ""]),
    row(["rounds", count(o.rounds), count(f.rounds), delta(f.rounds - o.rounds, count)]),
    row(["tokens", tokens(o.input_tokens + o.output_tokens), tokens(f.input_tokens + f.output_tokens), delta(c.tokens_delta, tokens)]),
    row(["cost", cost(o.cost_usd), cost(f.cost_usd), c.cost_delta_usd === null ? "—" : delta(Number(c.cost_delta_usd), usd)]),
  );
  const per = h("table", "tl-cmp tl-num");
  per.append(row(["round", "original", "fork", "change"], true));
  // each side on up to three short lines, so the table fits a narrow notebook
  /** @param {any} x */
  const side = (x) => {
    if (!x) return "—";
    const what = x.outcome === "tools" ? plural(x.tool_calls, "tool call") : OUTCOME[x.outcome] || x.outcome;
    return h("span", "tl-cmp-cell", h("span", null, `${tokens(x.tokens)} tokens`), h("span", null, cost(x.cost_usd)), h("span", "tl-meta", what));
  };
  for (const pr of c.rounds) {
    const final = (pr.fork && pr.fork.purpose === "synthesis") || (pr.original && pr.original.purpose === "synthesis");
    const label = h("span", "tl-cmp-cell", h("span", null, count(pr.round) + (final ? " (final)" : "")), pr.taken ? h("span", "tl-meta", "taken") : null);
    const change = pr.taken ? h("span", "tl-meta", "same") : h("span", "tl-cmp-cell", h("span", null, `${delta(pr.tokens_delta, tokens)} tokens`), h("span", null, pr.cost_delta_usd === null ? "—" : delta(Number(pr.cost_delta_usd), usd)));
    per.append(row([label, side(pr.original), side(pr.fork), change]));
  }
  box.append(h("div", "tl-scroll-x", totals), h("div", "tl-sub", "Round by round"), h("div", "tl-scroll-x", per));
  if (c.error) box.append(h("div", "tl-flag", dot("error"), `The fork stopped with ${c.error}.`));
  return box;
}

/**
 * @param {ViewContext} ctx
 */
export function createFork(ctx) {
  const { s, host } = ctx;
  const forkBtn = button("Fork from here", null, () => forkHere(), "Run this run again from the selected round, in a new debugger below");
  const forkMsg = h("div", "tl-fork-msg");
  forkMsg.setAttribute("role", "status");
  const forkBox = h("div", "tl-forkbox");

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
    forkBtn.hidden = !(host.forking && isDone(s.run) && r);
    forkBtn.disabled = !can || !!(s.ui.forkMsg && s.ui.forkMsg.state === "idle");
    forkBtn.title = can ? "Run this run again from the selected round, in a new debugger below" : "This debugger knows no agent to fork with: open it with LoopDebugger.from_trace(path, fork_with=agent)";
    drawForkMsg();
    // a fork's own debugger: where it came from, and the two runs side by side at its end
    const info = s.forkInfo;
    forkBox.textContent = "";
    forkBox.hidden = !info || info.at_round === undefined;
    if (forkBox.hidden) return;
    const from = FROM[info.source] || "a run";
    forkBox.append(h("div", null, h("span", "tl-strong", `Fork of ${from} at round ${count(info.at_round)}.`), " ", h("span", "tl-meta", `Rounds before it were taken from the original; rounds are numbered as in the original.`)));
    if (info.comparison) forkBox.append(block(s.ui.collapsed, "fork:cmp", "The fork next to the original", () => comparisonView(info.comparison), { copy: () => info.comparison.summary || "" }));
  }

  return { nodes: { forkBtn, forkMsg, forkBox }, draw };
}
