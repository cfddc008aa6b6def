// Long conversations and failed calls, mounted on a page (jsdom): "Show 40 more" and "Show
// all" reach the first of 4,000 earlier messages in a few clicks, never drawing more than a
// bounded window at once; a call that raised shows where, as text.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { mount } = await import(src("debugger.js"));
const { WINDOW, STEP } = await import(src("history.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const DOM_BUDGET = 3_000; // the widget's nodes at most (the 10,000-round browser test's bound)
const XSS = "<img src=x onerror=alert(1)>";

const usage = (i, o) => ({ input_tokens: i, output_tokens: o, cache_read_tokens: 0, cache_write_tokens: 0, requests: 1, estimated: false, cost_usd: "0.0001", input_cost_usd: "0.00005" });
const message = (i) => ({ type: i % 2 ? "ai" : "human", data: { content: `message ${i + 1}` } });

/** A run whose second call was sent 3,998 earlier messages and 2 new ones; its third call raised. */
function longRun() {
  const base = { run_id: "r1" };
  let t = 0;
  const ev = (kind, round, fields) => ({ ...base, kind, round, t: (t += 0.01), ...fields });
  const earlier = Array.from({ length: 3998 }, (_, i) => message(i));
  return [
    ev("loop_start", 0, { model_name: "m", tools: ["echo"], max_rounds: 10, token_budget: null, context_window: 128000, usd_limit: null, prune_tools: [], started_at: "2026-01-01T00:00:00+00:00", input_messages: 3998 }),
    ev("round_start", 1, { max_rounds: 10 }),
    ev("model_call_start", 1, { call: 1, purpose: "round", model_name: "m", tools: ["echo"], messages: earlier, streaming: false }),
    ev("model_call", 1, { call: 1, purpose: "round", model_name: "m", usage: usage(10, 5), accumulated: usage(10, 5), latency_s: 0.01, text: "", tool_calls: [{ id: "c1", name: "echo", args: { text: "a" }, valid: true, error: null }], finish_reason: null, stuck: false }),
    ev("tool_dispatch", 1, { tool_call_id: "c1", name: "echo", args: { text: "a" }, status: "success", error_reason: null, duration_s: 0.001, output_chars: 1, content: "a", ran: true }),
    ev("round_start", 2, { max_rounds: 10 }),
    ev("model_call_start", 2, { call: 2, purpose: "round", model_name: "m", tools: ["echo"], messages: [message(3998), message(3999)], streaming: false }),
    ev("model_call", 2, { call: 2, purpose: "round", model_name: "m", usage: usage(10, 5), accumulated: usage(20, 10), latency_s: 0.01, text: "", tool_calls: [{ id: "c2", name: "echo", args: { text: "b" }, valid: true, error: null }], finish_reason: null, stuck: false }),
    ev("tool_dispatch", 2, { tool_call_id: "c2", name: "echo", args: { text: "b" }, status: "success", error_reason: null, duration_s: 0.001, output_chars: 1, content: "b", ran: true }),
    ev("round_start", 3, { max_rounds: 10 }),
    ev("model_call_start", 3, { call: 3, purpose: "round", model_name: "m", tools: ["echo"], messages: [], streaming: false }),
    ev("model_call_failed", 3, { call: 3, purpose: "round", error_type: "RuntimeError", message: `boom ${XSS}`, latency_s: 0.01, traceback: `Traceback (most recent call last):\n  File "provider.py", line 7, in send\n    raise RuntimeError(...)\nRuntimeError: boom ${XSS}\n` }),
    ev("loop_failure", 3, { error_type: "RuntimeError", error_kind: null, reason: null, message: `boom ${XSS}`, cause_type: null, rounds: 2, usage: usage(20, 10), any_invocation_made: true, cancelled: false, outcome: "failed" }),
  ];
}

async function mounted(events) {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, events);
  await frame();
  return { el, ...view };
}

async function openRound(el, n) {
  el.querySelector(`.tl-row[data-n='${n}']`).dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
  await frame();
}

const button = (el, label) => [...el.querySelectorAll(".tl-detail button")].find((b) => b.textContent === label);
const shownMessages = (el) => [...el.querySelectorAll(".tl-detail .tl-msg")].map((m) => m.querySelector("pre").textContent);

test("3,998 earlier messages: show 40 more, then show all from the first, never more than a window at once", async () => {
  const { el, dispose } = await mounted(longRun());
  await openRound(el, 2);
  const sent = [...el.querySelectorAll(".tl-block")].find((b) => b.textContent.startsWith("Sent to the model"));
  assert.match(sent.querySelector(".tl-block-title").textContent, /^Sent to the model \(4,000 messages, 2 new\)$/);
  assert.deepEqual(shownMessages(el), ["message 3999", "message 4000"]);
  assert.match(sent.querySelector(".tl-pager-bar").textContent, /^3,998 earlier messages/);

  button(el, `Show ${STEP} more`).click();
  assert.equal(shownMessages(el).length, STEP + 2);
  assert.equal(shownMessages(el)[0], "message 3959");
  assert.match(sent.textContent, /3,958 earlier messages/);

  // all of them: from the first, a window at a time; nothing between the first and a click
  button(el, "Show all").click();
  let drawn = shownMessages(el);
  assert.equal(drawn[0], "message 1");
  assert.equal(drawn.length, WINDOW + 2);
  assert.ok(sent.textContent.includes(`messages 1–${WINDOW} of 3,998`));
  const nodes = el.querySelectorAll("*").length;
  assert.ok(nodes < DOM_BUDGET, `${nodes} nodes after "Show all"`);

  // on to the last page, a window at a time
  for (let i = 0; i < 40 && button(el, `Next ${WINDOW}`); i++) button(el, `Next ${WINDOW}`).click();
  const last = [...el.querySelectorAll(".tl-detail button")].find((b) => /^Next \d+$/.test(b.textContent));
  if (last) last.click();
  drawn = shownMessages(el);
  assert.equal(drawn[drawn.length - 3], "message 3998");
  assert.ok(drawn.length <= WINDOW + 2);
  assert.ok(el.querySelectorAll("*").length < DOM_BUDGET);

  // and back to the newest
  button(el, `Show ${STEP} more`).click();
  button(el, "Newest") && button(el, "Newest").click();
  assert.ok(shownMessages(el).length <= WINDOW + 2);
  dispose();
});

test("where the window sits survives a redraw of the round", async () => {
  const { el, dispose } = await mounted(longRun());
  await openRound(el, 2);
  button(el, "Show all").click();
  await openRound(el, 1);
  await openRound(el, 2);
  assert.equal(shownMessages(el)[0], "message 1");
  dispose();
});

test("a failed model call shows its traceback, as text", async () => {
  const { el, dispose } = await mounted(longRun());
  await openRound(el, 3);
  const reply = [...el.querySelectorAll(".tl-block")].find((b) => b.textContent.startsWith("Reply"));
  const subs = [...reply.querySelectorAll(".tl-sub")].map((n) => n.textContent);
  assert.deepEqual(subs, ["Traceback: RuntimeError"]);
  const tb = reply.querySelector("pre.tl-traceback");
  assert.ok(tb.textContent.startsWith("Traceback (most recent call last):"));
  assert.ok(tb.textContent.includes(`RuntimeError: boom ${XSS}`));
  assert.equal(tb.children.length, 0); // text only: no element made from it
  assert.equal(el.querySelectorAll("img").length, 0);
  dispose();
});

test("a real failed call carries its traceback from Python", async () => {
  const { el, dispose } = await mounted(loadCase("model_exception"));
  const failed = el.querySelector(".tl-row.tl-st-error");
  failed.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
  await frame();
  const tb = el.querySelector(".tl-detail pre.tl-traceback");
  assert.ok(tb, "the traceback is drawn");
  assert.match(tb.textContent, /^Traceback \(most recent call last\):\n/);
  assert.match(tb.textContent, /RuntimeError: provider exploded\n$/);
  dispose();
});

test("an old trace's failed call (no traceback) shows its error text", async () => {
  const events = longRun().map((e) => (e.kind === "model_call_failed" ? { ...e, traceback: undefined } : e));
  const { el, dispose } = await mounted(events);
  await openRound(el, 3);
  assert.equal(el.querySelector(".tl-detail pre.tl-traceback").textContent, `boom ${XSS}`);
  assert.ok([...el.querySelectorAll(".tl-detail .tl-sub")].some((n) => n.textContent === "Error: RuntimeError"));
  dispose();
});
