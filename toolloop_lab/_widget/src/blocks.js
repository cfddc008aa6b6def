// @ts-check
// The blocks of a round's detail: the model's reply, each tool call with its result, the
// budget checks, and what a person changed at a pause.

import { overshoot } from "./budget.js";
import { beforeAfter } from "./sidebyside.js";
import { chatMessage } from "./chat.js";
import { block, button, dot, h, longText } from "./dom.js";
import { capitalized, clip, duration, plural, tokens, visible } from "./format.js";
import { jsonView, resultView } from "./json.js";
import { textView } from "./prose.js";
import { cutShortLabel, notRunLabel, toolDot, toolSaid } from "./rounds.js";
import { held, runNow } from "./store.js";
import { GATE_NAME, INTERVENTION, MCP, ROUND_KIND, fill, reasonWords, usd, word } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {import("./run.js").Call} Call */
/** @typedef {import("./run.js").Tool} Tool */

const FLAG_CHARS = 300; // characters of an error message in a one-line flag (the whole below)

/**
 * What is odd about a reply, one line each.
 * @param {Round} r
 * @param {Call} c
 * @returns {string[]}
 */
function replyFlags(r, c) {
  const flags = [];
  if (c.stuck) flags.push("same tool calls as the previous round: no progress");
  if (c.truncated) flags.push("cut off by the output-token limit: its tool calls were not run");
  if (c.empty) flags.push("no text and no tool call");
  if (c.interrupted) flags.push(c.interrupted === "cancelled" ? "stopped before the reply came back" : c.error ? `the call failed: ${c.error.type}${c.error.message ? `: ${clip(c.error.message, FLAG_CHARS)}` : ""}` : "the run failed before the reply came back");
  const earlier = r.failedCalls.length - (c.error && c.interrupted === "failed" ? 1 : 0);
  if (earlier > 0 && c.done) flags.push(`${plural(earlier, "earlier attempt")} of this call failed (${r.failedCalls.slice(0, earlier).map((f) => f.type).join(", ")}); this is the retry's reply`);
  return flags;
}

/**
 * Why each call of the round that raised failed: its error and, when its event carries it,
 * where it raised (the traceback, clipped by Python, drawn as text).
 * @param {Round} r
 * @returns {HTMLElement[]}
 */
function failedCallsView(r) {
  const out = [];
  const many = r.failedCalls.length > 1;
  for (const [i, f] of r.failedCalls.entries()) {
    const text = f.traceback || f.message;
    if (!text) continue;
    const what = f.traceback ? "Traceback" : "Error";
    out.push(h("div", "tl-sub", `${what}${many ? ` of attempt ${i + 1}` : ""}: ${f.type}`), longText(text, "tl-traceback"));
  }
  return out;
}

/**
 * The model's reply: its counts, what is odd about it, its text and its tool calls.
 * @param {ViewContext} ctx
 * @param {Round} r
 * @param {Call} c
 * @returns {HTMLElement}
 */
export function replyBlock(ctx, r, c) {
  const s = ctx.s;
  const body = () => {
    const box = h("div");
    const facts = h("div", "tl-facts tl-num");
    const u = c.usage;
    if (u) {
      facts.append(h("span", null, `${tokens(u.input)} in${u.cacheRead ? ` (${tokens(u.cacheRead)} cached)` : ""}`), h("span", null, `${tokens(u.output)} out`), h("span", null, usd(u.cost)));
      if (u.costIn !== null || u.costOut !== null) facts.append(h("span", null, `input ${usd(u.costIn)} · output ${usd(u.costOut)}`));
    }
    if (c.latency !== null && c.latency !== undefined) facts.append(h("span", null, `response time ${duration(c.latency)} (request sent to whole reply)`));
    if (c.firstToken !== null && c.firstToken !== undefined) facts.append(h("span", null, `first token after ${duration(c.firstToken)}`));
    if (c.finish) facts.append(h("span", null, `finish reason ${c.finish}`));
    if (c.model) facts.append(h("span", null, c.model));
    box.append(facts);
    for (const f of replyFlags(r, c)) box.append(h("div", "tl-flag", dot("warn"), f));
    box.append(...failedCallsView(r));
    const text = c.text;
    if (text) box.append(textView(text, c.done ? "" : "tl-streaming"));
    else if (c.done) box.append(h("div", "tl-muted", "(no text)"));
    else if (held(s, c)) box.append(h("div", "tl-muted", "not sent yet: the run is paused before this call"));
    else if (!c.interrupted) {
      const wait = h("div", "tl-muted tl-num");
      /** @param {HTMLElement} node */
      const fn = (node) => (node.textContent = `waiting for the reply… ${duration(runNow(s) - (c.t0 || 0))}`);
      fn(wait);
      ctx.liveDetail.push([wait, fn]);
      box.append(wait);
    }
    const frags = c.done ? [] : c.fragments.filter(Boolean);
    for (const f of frags) box.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calling ${f.name || "a tool"} (arguments so far)`), h("pre", "tl-text tl-streaming", f.args)));
    if (c.toolCalls.length) {
      const calls = h("div", "tl-calls");
      for (const tc of c.toolCalls) calls.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calls ${tc.name} · ${tc.id}${tc.valid === false ? " · invalid arguments" : ""}`), jsonView(tc.args || {}, 1)));
      box.append(calls);
    }
    return box;
  };
  const label = c.done ? "Reply" : c.interrupted ? "Reply (never came back)" : held(s, c) ? "Reply (not sent yet)" : c.streaming ? "Reply (streaming)" : "Reply (waiting)";
  return block(s.ui.collapsed, `r${r.n}:reply:${c.done ? 1 : 0}`, label, body, { copy: () => c.text || "" });
}

/**
 * A pruned result: what the model saw, what it saved, and the original on demand.
 * @param {HTMLElement} box
 * @param {any} p the pruning record
 */
function prunedView(box, p) {
  box.append(h("div", "tl-sub", "Result the model saw (pruned)"), resultView(p.pruned));
  const line = h("div", "tl-meta tl-num", `pruned ${tokens(p.before)} → ${tokens(p.after)} tokens: saved ${tokens(p.saved)}, net ${tokens(p.net)} after the pruning call's own ${tokens(p.usage.input + p.usage.output)} tokens`);
  box.append(line);
  if (p.net < 0) box.append(h("div", "tl-flag", dot("warn"), `pruning cost more than it saved: net loss of ${tokens(-p.net)} tokens`));
  const orig = h("div");
  const show = button(`Show the original (${plural(p.original.length, "character")})`, "tl-more", () => {
    if (orig.childNodes.length) {
      orig.textContent = "";
      show.textContent = `Show the original (${plural(p.original.length, "character")})`;
    } else {
      orig.append(resultView(p.original));
      show.textContent = "Hide the original";
    }
  });
  box.append(show, orig);
}

/**
 * @param {Tool} t
 * @param {{action: string, before: any, after: any} | undefined} edit a person's edit of its arguments
 * @returns {HTMLElement}
 */
function toolBody(t, edit) {
  const box = h("div");
  const facts = h("div", "tl-facts tl-num");
  if (t.status === "not_run") facts.append(h("span", null, notRunLabel(t)));
  else {
    const cut = t.status === "cancelled";
    facts.append(h("span", null, t.status === "running" ? "running" : t.status === "queued" ? "waiting to run" : cut ? cutShortLabel(t) : t.status));
    if (t.reason && !cut) facts.append(h("span", null, `reason: ${reasonWords(t.reason)}`));
    if (t.duration !== null) facts.append(h("span", null, `ran ${duration(t.duration)}${cut ? " until then" : ""}`));
    if (t.status === "success" || t.status === "error") facts.append(h("span", null, `${plural(t.chars, "character")}`));
  }
  facts.append(h("span", null, `id ${t.id}`));
  box.append(facts);
  if (t.callError) box.append(h("div", "tl-flag", dot("error"), `invalid call: ${t.callError}`));
  if (t.edited) box.append(h("div", "tl-flag", dot("warn"), "arguments edited by you before it ran"));
  if (t.answeredByHand) box.append(h("div", "tl-flag", dot("warn"), "answered by you: the tool never ran"));
  const changed = edit && beforeAfter(edit);
  if (changed) box.append(h("div", "tl-sub", "Arguments (changed by you)"), changed);
  else box.append(h("div", "tl-sub", "Arguments"), jsonView(t.args || {}, 1));
  if (t.status === "queued" || t.status === "running") return box;
  if (t.pruned) prunedView(box, t.pruned);
  else if ((t.status !== "not_run" && t.reason !== "interrupted") || t.content) {
    // a call an interrupt() paused has no answer yet: it waits for the person
    const heading = t.status === "not_run" || t.status === "cancelled" ? "Answer sent to the model instead" : "Result";
    box.append(h("div", "tl-sub", heading), resultView(t.content));
  }
  box.append(...richResult(t), ...callLog(t));
  return box;
}

/** Image types the page draws from their bytes (Python's DRAWN_IMAGE_TYPES): no SVG, ever. */
export const DRAWN_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * An image block drawn as an image, its data URL built here from a checked MIME type and
 * base64 text (a URL the block names is never loaded); null when it may not be drawn.
 * @param {any} b
 * @returns {HTMLImageElement | null}
 */
export function drawnImage(b) {
  if (!b || b.type !== "image" || typeof b.mime_type !== "string" || typeof b.base64 !== "string") return null;
  const mime = b.mime_type.toLowerCase();
  if (!DRAWN_IMAGES.has(mime) || !b.base64 || b.base64.length % 4 !== 0 || !BASE64.test(b.base64)) return null;
  const img = h("img", "tl-result-img");
  img.alt = visible(typeof b.text === "string" ? b.text : mime);
  img.src = `data:${mime};base64,${b.base64}`;
  return img;
}

/**
 * What a result holds beyond its text: images drawn, structured content as a JSON tree.
 * @param {Tool} t
 * @returns {HTMLElement[]}
 */
function richResult(t) {
  const out = [];
  const images = (t.blocks || []).map(drawnImage).filter((x) => x !== null);
  if (images.length) out.push(h("div", "tl-sub", images.length === 1 ? "Image" : "Images"), h("div", "tl-result-imgs", ...images));
  if (t.structured && typeof t.structured === "object") out.push(h("div", "tl-sub", "Structured content"), jsonView(t.structured, 1));
  return out;
}

/**
 * What the call's MCP server logged while it ran, numbered as in its log.
 * @param {Tool} t
 * @returns {HTMLElement[]}
 */
function callLog(t) {
  if (!t.server || !t.log.length) return [];
  const head = fill(MCP.while_call, { name: t.server });
  const lines = t.log.map((l) => `${l.n}: ${l.text}`);
  if (t.logDropped) lines.unshift(`… ${plural(t.logDropped, "earlier line")} not kept`);
  return [h("div", "tl-sub", head.charAt(0).toUpperCase() + head.slice(1)), longText(lines.join("\n"), "tl-server-log")];
}

/**
 * One tool call: its facts, arguments and result.
 * @param {ViewContext} ctx
 * @param {Round} r
 * @param {Tool} t
 * @returns {HTMLElement}
 */
export function toolBlock(ctx, r, t) {
  const s = ctx.s;
  const st = t.status === "not_run" ? "idle" : toolDot(t);
  const chip = h("span", `tl-chip tl-chip-${t.status}`, dot(st), t.status === "not_run" ? notRunLabel(t) : t.status === "queued" ? "waiting" : t.status === "cancelled" ? cutShortLabel(t) : t.status);
  chip.title = visible(toolSaid(t));
  let extra = chip;
  if (t.server) {
    // the MCP server its tool came from, beside its status
    const badge = h("span", "tl-chip tl-chip-server", t.server);
    const v = s.run.servers.get(t.server);
    badge.title = visible(fill(MCP.server, { name: t.server, transport: v && v.transport ? word(MCP, v.transport) : "?" }));
    extra = h("span", "tl-chips", badge, chip);
  }
  if (t.status === "running") {
    const timer = h("span", "tl-meta tl-num");
    /** @param {HTMLElement} node */
    const fn = (node) => (node.textContent = duration(runNow(s) - (t.tStart || 0)));
    fn(timer);
    ctx.liveDetail.push([timer, fn]);
    chip.append(" ", timer);
  }
  return block(s.ui.collapsed, `r${r.n}:t:${t.id}`, `Tool ${t.name}`, () => toolBody(t, t.edited ? r.interventions.find((iv) => iv.action === "edit_args" && iv.id === t.id) : undefined), { copy: () => (t.pruned ? t.pruned.pruned : t.content), extra, open: r.tools.length <= 4 || t.status === "error" });
}

/**
 * A summarization call after the round's tools (LangChain's SummarizationMiddleware on a
 * create_agent run): a model call of the run, paid for, whose summary replaced the older
 * messages before the next round's call.
 * @param {ViewContext} ctx
 * @param {Round} r
 * @param {Call} c
 * @param {number} i its place among the round's summarization calls
 * @returns {HTMLElement}
 */
export function summaryBlock(ctx, r, c, i) {
  const said = c.interrupted === "failed" ? `failed${c.error ? `: ${c.error.type}` : ""}` : c.interrupted ? "stopped" : c.done ? "" : "running";
  const body = () => {
    const box = h("div", "tl-block-body");
    if (c.usage) box.append(h("div", "tl-meta tl-num", `${tokens(c.usage.input)} in · ${tokens(c.usage.output)} out${c.usage.cost !== null ? ` · ${usd(c.usage.cost)}` : ""}${typeof c.latency === "number" ? ` · ${duration(c.latency)}` : ""}${c.model ? ` · ${c.model}` : ""}`));
    if (said) box.append(h("div", "tl-flag", dot("warn"), said));
    box.append(h("div", "tl-sub", "Summary"), textView(c.text || ""));
    return box;
  };
  return block(ctx.s.ui.collapsed, `r${r.n}:sum:${i}`, capitalized(word(ROUND_KIND, "summarization")), body, { copy: () => c.text || "" });
}

/**
 * @param {Round} r
 * @returns {HTMLElement}
 */
export function gatesView(r) {
  const box = h("div", "tl-gates");
  for (const g of r.gates) {
    const name = word(GATE_NAME, g.gate);
    const when = g.stage === "before_call" ? "before the model call" : "after the model call";
    const fmt = g.gate === "token" ? tokens : usd;
    box.append(h("div", "tl-gate-line tl-num", dot(g.passed ? "answer" : "warn"), `${name}, checked ${when}: ${fmt(g.spent)} of ${fmt(g.limit)}, ${g.passed ? "within the limit" : "limit reached"}`));
    const over = g.passed ? null : overshoot(g.spent, g.limit);
    if (over) box.append(h("div", "tl-meta", over));
  }
  return box;
}

/**
 * @param {Round} r
 * @returns {HTMLElement}
 */
export function interventionsView(r) {
  const box = h("div");
  for (const iv of r.interventions) {
    box.append(h("div", "tl-sub", `You ${INTERVENTION[iv.action] || iv.action}${iv.id ? ` (${iv.id})` : ""}`));
    if (iv.action === "append_message" && iv.after && typeof iv.after === "object") {
      box.append(h("div", "tl-chat", chatMessage(iv.after)));
      continue;
    }
    box.append(beforeAfter(iv) || jsonView(iv.after, 1)); // old and new side by side
  }
  return box;
}
