// Prose or code: sentences show in the UI font, what looks like code, data or a log in
// monospace; on a page (jsdom), a reply and a message in prose, JSON arguments and a
// traceback in monospace.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLElement", "HTMLButtonElement", "getComputedStyle"]) globalThis[name] = dom.window[name];
dom.window.HTMLCanvasElement.prototype.getContext = () => null;
const { looksLikeCode, textView } = await import(src("prose.js"));
const { mount } = await import(src("debugger.js"));

const PROSE = [
  "Revenue rose 12% this quarter; churn is unknown.",
  "revenue up 12%. ".repeat(300),
  "users: OK (from the dashboard)",
  "not run: token budget spent",
  "Every service picks it up from the shared configuration, so a change to the retry policy reaches all of them.\n\nNext steps:\n  - raise the timeout\n  - re-run the backup\n  1. check billing",
  "",
];
const CODE = [
  '{"revenue": "+12%", "churn": "unknown"}',
  "[1, 2, 3]",
  'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nKeyError: \'Q3\'',
  "KeyError: 'Q3'",
  "def add(a, b):\n    return a + b\n",
  "2024-05-01 12:00:01 INFO started\n2024-05-01 12:00:02 ERROR disk full",
  "[12:00:01] backup started\n[12:00:09] backup done",
  "name      size\nusers     96 GB\norders    412 GB",
  "| db | size |\n| --- | --- |\n| users | 96 GB |",
  "```python\nprint(1)\n```",
  "<img src=x onerror=alert(1)>",
  "x = f(y); z[0] = 3;",
];

test("sentences are prose; JSON, tracebacks, code, logs and columns are code", () => {
  for (const t of PROSE) assert.equal(looksLikeCode(t), false, JSON.stringify(t.slice(0, 60)));
  for (const t of CODE) assert.equal(looksLikeCode(t), true, JSON.stringify(t.slice(0, 60)));
});

test("a text's node carries its kind; a long one is cut until Show all", () => {
  assert.equal(textView("Revenue rose 12%.").className, "tl-text tl-prose");
  assert.equal(textView("KeyError: 'Q3'", "tl-streaming").className, "tl-text tl-code-text tl-streaming");
  const long = textView("word ".repeat(2000));
  assert.equal(long.querySelector("pre").className, "tl-text tl-prose");
  assert.match(long.querySelector("button").textContent, /^Show all 10,000 characters$/);
});

test("on a page: a prose reply and a user message in the UI font, arguments and a traceback in monospace", async () => {
  const ev = (kind, round, t, extra = {}) => ({ kind, run_id: "r", round, t, ...extra });
  const usage = { input_tokens: 10, output_tokens: 2, total_tokens: 12, cost_usd: "0.0001" };
  const human = { type: "human", data: { type: "human", content: "Did the backups succeed?" } };
  const events = [
    ev("loop_start", 0, 0, { model_name: "m", tools: ["read_log"], max_rounds: 4, started_at: "2025-01-01T00:00:00+00:00" }),
    ev("round_start", 1, 0, { max_rounds: 4 }),
    ev("model_call_start", 1, 0, { call: 1, purpose: "round", model_name: "m", messages: [human] }),
    ev("model_call", 1, 1, { call: 1, purpose: "round", model_name: "m", usage, accumulated: usage, latency_s: 1, text: "Reading the users log first, then the others.", tool_calls: [{ id: "c1", name: "read_log", args: { database: "users" } }], finish_reason: "tool_calls" }),
    ev("tool_start", 1, 1, { tool_call_id: "c1", name: "read_log", args: { database: "users" } }),
    ev("tool_dispatch", 1, 2, { tool_call_id: "c1", name: "read_log", args: { database: "users" }, status: "error", error_reason: "tool_error", error_type: "KeyError", duration_s: 1, output_chars: 40, content: 'Traceback (most recent call last):\nKeyError: "users"', ran: true }),
    ev("loop_finish", 1, 2, { final_text: "", rounds: 1, usage, outcome: "failed", messages: [] }),
  ];
  const el = document.createElement("div");
  document.body.append(el);
  const { dispose } = mount(el, events);
  await settled(); // a draw starts on the next frame and may go on in later tasks
  const kinds = [...el.querySelectorAll(".tl-detail pre.tl-text")].map((n) => [n.className, n.textContent.slice(0, 20)]);
  assert.deepEqual(kinds, [
    ["tl-text tl-prose", "Did the backups succ"],
    ["tl-text tl-prose", "Reading the users lo"],
    ["tl-text tl-code-text", "Traceback (most rece"],
  ]);
  assert.ok(el.querySelector(".tl-detail .tl-json .tl-jstr")); // the arguments: a JSON tree, monospace by its class
  dispose();
});
