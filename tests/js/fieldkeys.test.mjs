// Keys typed in the widget's fields stay in the widget (jsdom): Shift+Enter, Ctrl+Enter,
// Alt+Enter and Escape never reach the notebook's listeners on the document, in either
// phase, while its other shortcuts (Ctrl+S) still do; an editor at a pause closes on
// Escape (what was there shows again, the focus goes back to its button) and applies on
// Ctrl+Enter.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";
import { script } from "./run_script.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLElement", "HTMLButtonElement", "getComputedStyle"]) globalThis[name] = dom.window[name];
dom.window.HTMLCanvasElement.prototype.getContext = () => null;
const { notebookKey } = await import(src("keys.js"));
const { createStore, enqueue, notify } = await import(src("store.js"));
const { createView } = await import(src("view.js"));
const { EDITOR_KEYS } = await import(src("editor.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const SUPPRESS = "data-lm-suppress-shortcuts";

/** What the notebook's listeners on the document hear: [phase, key, field marked for Lumino]. */
const heard = [];
for (const capture of [true, false]) {
  document.addEventListener("keydown", (ev) => heard.push([capture ? "capture" : "bubble", ev.key, ev.target.hasAttribute(SUPPRESS)]), capture);
}

const press = (node, key, extra = {}) => {
  const ev = new dom.window.KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...extra });
  node.dispatchEvent(ev);
  return ev;
};

const CALL = { id: "call_7", name: "a", args: { path: "a.txt" } };

/** A live run paused before its tools run, editable, drawn on a page; what it sends is kept. */
async function paused() {
  const el = document.createElement("div");
  document.body.append(el);
  const s = createStore();
  s.live = true;
  s.source = "live";
  const sent = [];
  const host = { live: true, pauseOn: () => "tools", setPauseOn() {}, control() {}, send: (m) => sent.push(m), forking: false, canFork: () => false };
  const dispose = createView(el, s, host);
  enqueue(s, script([{ call: [0, 1], tools: [["a", 1, 2]] }], { finished: false }));
  s.control = { ...s.control, paused_at: { pause: 3, stage: "tool_dispatch", calls: [CALL], editable: true } };
  s.version++;
  notify(s);
  await frame();
  return { el, s, sent, dispose };
}

test("the keys a notebook runs cells or leaves edit mode with", () => {
  for (const mod of ["shiftKey", "ctrlKey", "metaKey", "altKey"]) assert.equal(notebookKey({ key: "Enter", [mod]: true }), true, mod);
  assert.equal(notebookKey({ key: "Escape" }), true);
  assert.equal(notebookKey({ key: "Enter" }), false);
  assert.equal(notebookKey({ key: "s", ctrlKey: true }), false);
});

test("keys typed in a field stay in the widget; other shortcuts and other places keep theirs", async () => {
  const { el, dispose } = await paused();
  const search = el.querySelector(".tl-toolbar input[type=search]");
  heard.length = 0;
  for (const extra of [{ shiftKey: true }, { ctrlKey: true }, { metaKey: true }, { altKey: true }]) press(search, "Enter", extra);
  press(search, "Escape");
  // heard while travelling down, marked for Lumino to skip; never heard bubbling up
  assert.deepEqual(heard, [
    ["capture", "Enter", true],
    ["capture", "Enter", true],
    ["capture", "Enter", true],
    ["capture", "Enter", true],
    ["capture", "Escape", true],
  ]);
  await frame();
  assert.equal(search.hasAttribute(SUPPRESS), false); // the mark was for that key only
  heard.length = 0;
  press(search, "Shift", { shiftKey: true }); // alone: JupyterLab would hold the next line break
  assert.deepEqual(heard, [["capture", "Shift", false]]);
  heard.length = 0;
  press(search, "s", { ctrlKey: true }); // Ctrl+S still saves the notebook
  press(search, "a");
  press(el.querySelector(".tl-scroller"), "Enter", { shiftKey: true }); // not a field: the notebook's
  assert.deepEqual(heard, [
    ["capture", "s", false],
    ["bubble", "s", false],
    ["capture", "a", false],
    ["bubble", "a", false],
    ["capture", "Enter", false],
    ["bubble", "Enter", false],
  ]);
  dispose();
});

test("Escape closes an editor and shows what was there; focus goes back to its button", async () => {
  const { el, sent, dispose } = await paused();
  const openArgs = () => [...el.querySelectorAll("button")].find((b) => b.textContent === "Edit arguments…");
  openArgs().click();
  await frame();
  const area = el.querySelector(".tl-editor textarea");
  assert.equal(el.querySelector(".tl-edit-keys").textContent, EDITOR_KEYS);
  assert.match(EDITOR_KEYS, /^(Ctrl|⌘)\+Enter applies · Esc cancels$/);
  area.focus();
  area.value = '{"path": "b.txt"}';
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  heard.length = 0;
  const ev = press(area, "Escape");
  assert.equal(ev.defaultPrevented, true);
  assert.deepEqual(heard, [["capture", "Escape", true]]);
  await frame();
  await frame();
  assert.equal(el.querySelector(".tl-editor"), null);
  const block = [...el.querySelectorAll(".tl-block")].find((b) => b.textContent.includes("About to run"));
  assert.ok(block.textContent.includes('"a.txt"') && !block.textContent.includes("b.txt"));
  assert.equal(document.activeElement, openArgs());
  openArgs().click(); // opened again: the call's own arguments, not the dropped edit
  await frame();
  assert.equal(el.querySelector(".tl-editor textarea").value, JSON.stringify(CALL.args, null, 2));
  assert.deepEqual(sent.filter((m) => m.action !== "check_args"), []);
  dispose();
});

test("Ctrl+Enter (or Cmd+Enter) applies the editor; Shift+Enter is only a new line", async () => {
  const { el, sent, dispose } = await paused();
  [...el.querySelectorAll("button")].find((b) => b.textContent === "Skip with result…").click();
  await frame();
  const area = el.querySelector(".tl-editor textarea");
  area.value = "users: OK";
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  assert.equal(press(area, "Enter", { shiftKey: true }).defaultPrevented, false);
  assert.equal(sent.length, 0);
  assert.equal(press(area, "Enter", { ctrlKey: true }).defaultPrevented, true);
  assert.deepEqual(sent.map(({ request, ...m }) => m), [{ type: "intervene", pause: 3, action: "skip", call_id: "call_7", content: "users: OK", status: "success" }]);
  assert.equal(el.querySelector(".tl-editor .tl-primary").disabled, true); // sent, waiting for Python
  press(area, "Enter", { metaKey: true }); // a second press while it is sent sends nothing more
  assert.equal(sent.length, 1);
  dispose();
});
