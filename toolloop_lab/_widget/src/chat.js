// @ts-check
// Messages as a chat: what a model call was sent (earlier messages folded), and at a
// pause before a call, what the next call will be sent.

import { dot, h } from "./dom.js";
import { messagePager } from "./history.js";
import { plural } from "./format.js";
import { jsonView, prettyJson } from "./json.js";
import { textView } from "./prose.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./run.js").Call} Call */

const MAX_MESSAGES = 40; // messages of one call drawn before "show earlier"

/** @type {Readonly<Record<string, string>>} */
const ROLE = { human: "User", ai: "Assistant", system: "System", tool: "Tool", AIMessageChunk: "Assistant", HumanMessageChunk: "User" };

/**
 * A message's content as text (content blocks joined; other values as JSON).
 * @param {any} content
 * @returns {string}
 */
export function messageText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (typeof b === "string" ? b : b && typeof b.text === "string" ? b.text : prettyJson(b)))
      .join("\n");
  }
  return content === null || content === undefined ? "" : prettyJson(content);
}

/**
 * One message ({type, data} as langchain-core dumps it) as a chat bubble.
 * @param {any} m
 * @returns {HTMLElement}
 */
export function chatMessage(m) {
  const data = (m && m.data) || {};
  const type = (m && m.type) || data.type || "?";
  const role = Object.hasOwn(ROLE, type) ? ROLE[type] : type;
  const text = messageText(data.content);
  const head = h("div", "tl-msg-head", h("span", "tl-role", role));
  if (type === "tool") {
    head.append(h("span", "tl-msg-meta", `${data.name || "tool"} · ${data.tool_call_id || ""}`));
    if (data.status === "error") head.append(dot("error"), h("span", "tl-msg-meta", "error"));
  }
  const msg = h("div", `tl-msg tl-role-${type}`, head);
  if (text) msg.append(textView(text));
  else if (!(data.tool_calls && data.tool_calls.length)) msg.append(h("div", "tl-muted", "(no text)"));
  for (const tc of data.tool_calls || []) {
    msg.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calls ${tc.name} · ${tc.id || ""}`), jsonView(tc.args || {}, 1)));
  }
  return msg;
}

/**
 * What a call was sent: earlier messages folded, this call's new ones shown (its newest
 * MAX_MESSAGES); either part opens 40 more at a time or all of it, a bounded window at a time.
 * @param {Store} s
 * @param {Call} c
 * @returns {HTMLElement}
 */
export function callInput(s, c) {
  const box = h("div", "tl-chat");
  const from = c.msgFrom || 0;
  const to = c.msgTo || 0;
  /** @param {number} i */
  const draw = (i) => chatMessage(s.run.conversation[i]);
  if (s.omittedMessages) box.append(h("div", "tl-muted", `${plural(s.omittedMessages, "earlier message")} came from rounds this notebook file left out (the trace has them).`));
  if (from > 0) box.append(messagePager({ owner: c, key: "earlier", lo: 0, hi: from, initial: 0, draw, hidden: (n) => plural(n, "earlier message") }));
  box.append(messagePager({ owner: c, key: "new", lo: from, hi: to, initial: MAX_MESSAGES, draw, hidden: (n) => `${plural(n, "message")} of this call not drawn` }));
  return box;
}

/**
 * At a pause before a model call: what the next call will be sent beyond the conversation
 * so far (the reply and tool results not yet confirmed by a model_call_start).
 * @param {Store} s
 * @returns {any[]}
 */
export function pendingMessages(s) {
  /** @type {any[]} */
  const out = [];
  const run = s.run;
  const last = run.rounds[run.rounds.length - 1];
  if (!last || !last.call || !last.call.done) return out;
  const c = last.call;
  if (c.msgTo !== null && c.msgTo < run.conversation.length) return out;
  out.push({ type: "ai", data: { content: c.text, tool_calls: c.toolCalls.map((t) => ({ name: t.name, args: t.args, id: t.id })) } });
  for (const t of last.tools) {
    if (t.status === "queued" || t.status === "running") continue;
    const content = t.pruned ? t.pruned.pruned : t.content;
    out.push({ type: "tool", data: { content, name: t.name, tool_call_id: t.id, status: t.status === "success" ? "success" : "error" } });
  }
  return out;
}
