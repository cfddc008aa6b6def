// @ts-check
// How a budget reads: a run the USD limit stopped (how many calls were paid for, what of
// its last round never happened), a gate that tripped, and why a figure can pass its limit.
// The words are words.json's budget_stop and gate_tripped tables; _widget/figures.py's
// budget_stop and overshoot say the same from the same tables.

import { count, pct } from "./format.js";
import { BUDGET_STOP, GATE_TRIPPED, ROUND_KIND, fill, outcomeWords, word } from "./words.js";

/** @typedef {import("./run.js").Run} Run */
/** @typedef {import("./run.js").Round} Round */

/**
 * "Stopped by the USD limit after 4 paid calls; round 4's 2 tool calls did not run": a run
 * the USD limit stopped, from its events (the closing usage's request count, the gate that
 * tripped, the calls answered unrun); null for any other run.
 * @param {Run} run
 * @param {number} [offset] added to round numbers (a fork's rounds read as the original's)
 * @returns {string | null}
 */
export function budgetStop(run, offset = 0) {
  const f = run.failure;
  if (!f || run.outcome !== "usd_budget_exhausted") return null;
  let said = outcomeWords(run.outcome, null);
  const paid = f.usage && typeof f.usage.requests === "number" ? f.usage.requests : 0;
  if (paid) said += " " + fill(BUDGET_STOP.after, { calls: fill(BUDGET_STOP[paid === 1 ? "call" : "calls"], { n: count(paid) }) });
  for (let i = run.rounds.length - 1; i >= 0; i--) {
    const r = run.rounds[i];
    for (let j = r.gates.length - 1; j >= 0; j--) {
      const g = r.gates[j];
      if (g.gate !== "usd" || g.passed) continue;
      const missed = notDone(r, g.stage, offset);
      return missed ? `${said}; ${missed}` : said;
    }
  }
  return said;
}

/**
 * What of the round where the USD gate tripped never happened, in words.
 * @param {Round} r
 * @param {string} stage
 * @param {number} offset
 * @returns {string | null}
 */
function notDone(r, stage, offset) {
  const where = r.purpose === "synthesis" ? `the ${word(ROUND_KIND, "synthesis")}` : `round ${count(r.n + offset)}`;
  if (stage === "before_call") return fill(BUDGET_STOP.not_sent, { round: where });
  const unrun = r.tools.filter((t) => !t.ran && t.reason === "budget_exhausted").length;
  if (unrun) return fill(BUDGET_STOP[unrun === 1 ? "tool_not_run" : "tools_not_run"], { round: where, n: count(unrun) });
  if (!r.tools.length && r.call && r.call.done) return fill(BUDGET_STOP.reply_unused, { round: where });
  return null;
}

/**
 * "over the limit by 26.0%: the budget is checked after each call, so the last call can
 * overshoot it": why a figure reads over 100 % of its limit; null when it does not.
 * @param {number} spent
 * @param {number | null | undefined} limit
 * @returns {string | null}
 */
export function overshoot(spent, limit) {
  if (!limit || limit <= 0 || !(spent > limit)) return null;
  return `over the limit by ${pct(spent / limit - 1)}: ${BUDGET_STOP.overshoot}`;
}

/**
 * The gates that tripped in round `r`, in words ("USD limit reached", "token budget
 * spent"): where a budget did its job, never the round's failure.
 * @param {Round} r
 * @returns {string[]}
 */
export function trippedGates(r) {
  const said = new Set();
  for (const g of r.gates) if (!g.passed) said.add(word(GATE_TRIPPED, g.gate));
  return [...said];
}
