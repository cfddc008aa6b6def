// @ts-check
// How a run's rounds and calls read in the header (_widget/figures.py's rounds_said says
// the same, and the parity test holds them together): the round under way of the cap
// while the run goes on; once it ended, its tool rounds and its model calls, names that
// say what they count (the answering call is a model call, not a tool round).

import { count } from "./format.js";
import { isDone } from "./run.js";
import { COUNTS, fill } from "./words.js";

/** @typedef {import("./run.js").Run} Run */

/**
 * Rounds that ended in tool calls (events.tool_rounds_of): from the closing event
 * once the run ended, the rounds with tool calls so far before.
 * @param {Run} run
 * @returns {number}
 */
export function toolRounds(run) {
  const end = run.finish || run.failure;
  if (!end) return run.rounds.filter((r) => r.purpose === "round" && r.tools.length > 0).length;
  const rounds = Number(end.rounds) || 0;
  const answered = !!run.finish && !end.synthesis_was_run && end.outcome !== "interrupted";
  return answered ? Math.max(rounds - 1, 0) : rounds;
}

/**
 * Model calls the run paid for so far, the final-answer and pruning calls included.
 * @param {Run} run
 * @returns {number}
 */
export function modelCalls(run) {
  return run.totals.requests;
}

/**
 * Rounds that ran so far, the one whose reply answered included (a final-answer call is
 * not a round).
 * @param {Run} run
 * @returns {number}
 */
export function roundsRun(run) {
  return run.rounds.filter((r) => r.purpose === "round").length;
}

/**
 * The header's rounds: `round 2 of 10` while the run goes on, `3 tool rounds, 4 model
 * calls (at most 10 rounds)` once it ended; `offset` (a fork's rounds taken from its source,
 * one call each) is added. Empty without the run's cap.
 * @param {Run} run
 * @param {number} [offset]
 * @returns {string}
 */
export function roundsSaid(run, offset = 0) {
  const cap = run.run && run.run.maxRounds;
  if (!cap) return "";
  if (!isDone(run)) return fill(COUNTS.round_of, { n: count(roundsRun(run) + offset), max: count(cap + offset) });
  const tools = toolRounds(run) + offset;
  const calls = modelCalls(run) + offset;
  const said = [
    fill(COUNTS[tools === 1 ? "tool_round" : "tool_rounds"], { n: count(tools) }),
    fill(COUNTS[calls === 1 ? "model_call" : "model_calls"], { n: count(calls) }),
  ].join(", ");
  return `${said} (${fill(COUNTS.cap, { max: count(cap + offset) })})`;
}
