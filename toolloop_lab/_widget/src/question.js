// @ts-check
// What a run was asked: its first user message, as _runview.py's RunView.question reads it
// (a string content as it is, content blocks' text parts joined by newlines, cut to
// QUESTION_CHARS); the header shows it beside the run's name. No DOM.

import { clip } from "./format.js";

export const QUESTION_CHARS = 200; // _runview.py's QUESTION_CHARS

const USER = new Set(["human", "HumanMessageChunk"]);

/**
 * @param {any} block
 * @returns {string | null}
 */
function blockText(block) {
  if (typeof block === "string") return block;
  return block && typeof block === "object" && typeof block.text === "string" ? block.text : null;
}

/**
 * The text of the first user message among `messages` (langchain-core message dicts), or
 * null when none is one.
 * @param {any[]} messages
 * @param {number} [from] where to start looking
 * @returns {string | null}
 */
export function firstUserText(messages, from = 0) {
  for (let i = from; i < messages.length; i++) {
    const m = messages[i];
    if (!m || typeof m !== "object" || !USER.has(m.type)) continue;
    const content = m.data && typeof m.data === "object" ? m.data.content : undefined;
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map(blockText).filter((t) => t !== null).join("\n");
    return "";
  }
  return null;
}

/**
 * A run's question, cut as Python cuts it (null before a call sent a user message).
 * @param {{conversation: any[]}} run
 * @returns {string | null}
 */
export function runQuestion(run) {
  const text = firstUserText(run.conversation);
  return text === null ? null : clip(text, QUESTION_CHARS);
}
