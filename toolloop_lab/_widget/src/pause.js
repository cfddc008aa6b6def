// @ts-check
// What the loop is about to do while it waits at a pause: the messages the next model call
// will be sent, or the tool calls it will run, with the editor's buttons when Python says
// the pause can be changed.

import { chatMessage, messageText, pendingMessages } from "./chat.js";
import { block, button, dot, h } from "./dom.js";
import { count, plural } from "./format.js";
import { opener } from "./editor.js";
import { jsonView, prettyJson } from "./json.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {ReturnType<typeof import("./editor.js").createEditor>} Editor */

/**
 * `btn`, marked as the opener of the editor of `kind` for `callId` (focus returns to it).
 * @param {HTMLButtonElement} btn
 * @param {string} kind
 * @param {string} [callId]
 * @returns {HTMLButtonElement}
 */
function opens(btn, kind, callId) {
  btn.dataset.opens = opener(kind, callId);
  return btn;
}

/**
 * @param {ViewContext} ctx
 * @param {Editor} editor
 * @returns {HTMLElement}
 */
export function aboutToSend(ctx, editor) {
  const s = ctx.s;
  const p = s.control.paused_at || {};
  if (Array.isArray(p.messages)) return exactlySent(ctx, editor, p);
  const pending = pendingMessages(s);
  return block(
    s.ui.collapsed,
    "pause:send",
    "About to send",
    () => {
      const box = h("div", "tl-chat");
      const conversation = s.run.conversation;
      const n = conversation.length;
      box.append(h("div", "tl-meta", `${plural(n + pending.length, "message")} in all; the newest:`));
      const start = Math.max(0, n - 4);
      for (let i = start; i < n; i++) box.append(chatMessage(conversation[i]));
      for (const m of pending) box.append(chatMessage(m));
      return box;
    },
    { copy: () => prettyJson([...s.run.conversation, ...pending]) },
  );
}

/**
 * Exactly what the loop will send (its newest messages), as the pause point says.
 * @param {ViewContext} ctx
 * @param {Editor} editor
 * @param {any} p the pause point
 * @returns {HTMLElement}
 */
function exactlySent(ctx, editor, p) {
  const s = ctx.s;
  const total = p.message_count || p.messages.length;
  const results = new Set(p.results || []);
  const body = () => {
    const box = h("div", "tl-chat");
    if (total > p.messages.length) box.append(h("div", "tl-meta", `the newest ${count(p.messages.length)} of ${plural(total, "message")}:`));
    for (const m of p.messages) {
      const data = (m && m.data) || {};
      const id = data.tool_call_id;
      const editable = p.editable && m.type === "tool" && results.has(id);
      const e = s.ui.edit;
      if (editable && e && e.kind === "result" && e.callId === id) {
        box.append(h("div", "tl-msg tl-role-tool", h("div", "tl-msg-head", h("span", "tl-role", "Tool"), h("span", "tl-msg-meta", `${data.name || "tool"} · ${id}`)), editor.view(e)));
        continue;
      }
      const msg = chatMessage(m);
      if (editable) {
        const text = messageText(data.content);
        msg.append(h("div", "tl-edit-actions", opens(button("Edit result…", null, () => editor.open({ kind: "result", pause: p.pause, callId: id, name: data.name || "tool", text, status: data.status === "error" ? "error" : "success" }), "Replace this result before the model reads it"), "result", id)));
      }
      box.append(msg);
    }
    if (p.editable) {
      const e = s.ui.edit;
      if (e && e.kind === "message") box.append(editor.view(e));
      else box.append(h("div", "tl-edit-actions", opens(button("Add message…", null, () => editor.open({ kind: "message", pause: p.pause, text: "", role: "user" }), "Add a message to the conversation before this call"), "message")));
    }
    return box;
  };
  return block(s.ui.collapsed, "pause:send", `About to send (${plural(total, "message")})`, body, { copy: () => prettyJson(p.messages) });
}

/**
 * The tool calls the loop will run when the pause ends.
 * @param {ViewContext} ctx
 * @param {Editor} editor
 * @returns {HTMLElement}
 */
export function aboutToRun(ctx, editor) {
  const s = ctx.s;
  const p = s.control.paused_at || {};
  /** @type {any[]} */
  const calls = p.calls || [];
  const body = () => {
    const box = h("div", "tl-chat");
    for (const c of calls) {
      const line = h("div", "tl-msg tl-role-tool", h("div", "tl-msg-head", h("span", "tl-role", c.name), h("span", "tl-msg-meta", c.id)));
      if (c.valid === false) line.append(h("div", "tl-flag", dot("error"), `the model's arguments could not be read${c.error ? `: ${c.error}` : ""}`));
      const e = s.ui.edit;
      if (e && e.callId === c.id && (e.kind === "args" || e.kind === "skip")) line.append(editor.view(e));
      else {
        line.append(jsonView(c.args || {}, 1));
        if (p.editable) {
          line.append(
            h(
              "div",
              "tl-edit-actions",
              opens(button("Edit arguments…", null, () => editor.open({ kind: "args", pause: p.pause, callId: c.id, name: c.name, text: prettyJson(c.args || {}) }), "Run this call with other arguments (checked against the tool's schema)"), "args", c.id),
              opens(button("Skip with result…", null, () => editor.open({ kind: "skip", pause: p.pause, callId: c.id, name: c.name, text: "", status: "success" }), "Do not run this call; the model reads what you write as its result"), "skip", c.id),
            ),
          );
        }
      }
      box.append(line);
    }
    return box;
  };
  return block(s.ui.collapsed, "pause:run", `About to run (${plural(calls.length, "tool call")})`, body, { copy: () => prettyJson(calls) });
}
