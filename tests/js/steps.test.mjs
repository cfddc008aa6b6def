// Step mode on a live view (jsdom, a host standing in for the kernel): "Run with these
// arguments" is disabled, with the reason, while the live schema check says the arguments
// are wrong; an edit shows old and new side by side; after Continue, the "Pause before"
// selector says this run will not pause again, the mode for the next run as set.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { createView } = await import(src("view.js"));
const { createStore, receive } = await import(src("store.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const DRAW = 400; // a live view draws at most every DRAW_MS (150 ms) while events stream in

const usage = { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, requests: 1, estimated: false, cost_usd: "0.0001", input_cost_usd: "0.00005" };
const call = { id: "call_1", name: "read_log", args: { database: "users" }, valid: true, error: null };
let t = 0;
const ev = (kind, round, fields) => ({ run_id: "r1", kind, round, t: (t += 0.01), ...fields });
const START = [
  ev("loop_start", 0, { model_name: "m", tools: ["read_log"], max_rounds: 6, token_budget: null, context_window: 128000, usd_limit: null, prune_tools: [], started_at: "2026-01-01T00:00:00+00:00", input_messages: 1 }),
  ev("round_start", 1, { max_rounds: 6 }),
  ev("model_call_start", 1, { call: 1, purpose: "round", model_name: "m", tools: ["read_log"], messages: [{ type: "human", data: { content: "backups?" } }], streaming: false }),
  ev("model_call", 1, { call: 1, purpose: "round", model_name: "m", usage, accumulated: usage, latency_s: 0.01, text: "Reading the users log.", tool_calls: [call], finish_reason: null, stuck: false }),
];
const PAUSED = { run_id: "r1", round: 1, stage: "tool_dispatch", purpose: "tools", detail: ["read_log"], pause: 2, editable: true, calls: [call] };

/** A live view whose host answers each request with `answer(msg)` (null: no answer). */
function live(answer, mode = "both") {
  const s = createStore();
  s.live = true;
  const sent = [];
  let first = 0;
  let control = { paused_at: PAUSED, paused_since: 0.05, running: true, note: null, stopped_by_user: false, continued: false };
  const push = (events, extra = {}) => {
    control = { ...control, ...extra };
    receive(s, { type: "events", epoch: 1, first, reset: first === 0, events, now: 0.1, control });
    first += events.length;
  };
  const host = {
    live: true,
    pauseOn: () => mode,
    setPauseOn(v) {
      mode = v;
    },
    control(action) {
      sent.push({ type: "control", action });
    },
    send(msg) {
      sent.push(msg);
      const a = answer(msg);
      if (a) setTimeout(() => push([], { answer: { request: msg.request, ...a } }), 5);
    },
    forking: false,
    canFork: () => false,
  };
  const el = document.createElement("div");
  document.body.append(el);
  const dispose = createView(el, s, host);
  push(START);
  return { el, s, sent, push, dispose };
}

const byText = (el, selector, text) => [...el.querySelectorAll(selector)].find((n) => n.textContent === text);

async function typeArgs(el, text) {
  const area = el.querySelector(".tl-editor textarea");
  area.value = text;
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  await frame(420); // the live check runs 300 ms after the last keystroke
}

test("Run with these arguments is disabled, with the reason, while the live check says the arguments are wrong", async (t) => {
  const check = (msg) => (msg.action !== "check_args" ? null : "db" in msg.args ? { ok: false, reason: "invalid_args", message: "unknown argument(s) db" } : typeof msg.args.database !== "string" ? { ok: false, reason: "invalid_args", message: "database: Input should be a valid string" } : { ok: true });
  const { el, sent, dispose } = live(check);
  t.after(dispose);
  await frame();
  byText(el, "button", "Edit arguments…").click();
  await frame();
  const run = () => byText(el, ".tl-editor button", "Run with these arguments");
  assert.equal(run().disabled, false); // nothing typed yet
  const area = el.querySelector(".tl-editor textarea");
  area.value = '{"db": "orders"}';
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  // typed: until the check says, no verdict is shown and nothing can be sent
  assert.equal(el.querySelector(".tl-edit-msg").textContent, "Checking the arguments against the tool's schema…");
  assert.equal(run().disabled, true);
  await frame(420);
  assert.equal(el.querySelector(".tl-edit-msg").textContent, "unknown argument(s) db");
  assert.equal(run().disabled, true);
  assert.equal(run().title, "Fix the arguments first: unknown argument(s) db");
  assert.equal(document.getElementById(run().getAttribute("aria-describedby")).textContent, "unknown argument(s) db");
  await typeArgs(el, "{not json");
  assert.match(el.querySelector(".tl-edit-msg").textContent, /^Not valid JSON/);
  assert.equal(run().disabled, true);
  await typeArgs(el, '{"database": 7}');
  assert.equal(run().disabled, true);
  assert.match(run().title, /valid string/);
  await typeArgs(el, '{"database": "orders"}');
  assert.equal(el.querySelector(".tl-edit-msg").textContent, "These arguments fit the tool's schema.");
  assert.equal(run().disabled, false);
  assert.equal(run().title, "");
  run().click();
  assert.deepEqual(sent.filter((m) => m.action === "edit_args").map((m) => m.args), [{ database: "orders" }]);
});

test("an edit marked changed by you shows old and new side by side", async (t) => {
  const { el, push, dispose } = live(() => null);
  t.after(dispose);
  push([ev("intervention", 1, { action: "edit_args", stage: "tool_dispatch", tool_call_id: "call_1", before: { database: "users", since: "yesterday" }, after: { database: "orders", limit: 5 } })]);
  push(
    [
      ev("tool_start", 1, { tool_call_id: "call_1", name: "read_log", args: { database: "orders", limit: 5 } }),
      ev("tool_dispatch", 1, { tool_call_id: "call_1", name: "read_log", args: { database: "orders", limit: 5 }, status: "success", error_reason: null, duration_s: 0.01, output_chars: 14, content: "orders: FAILED", ran: true }),
    ],
    { paused_at: null },
  );
  await frame();
  const changed = [...el.querySelectorAll(".tl-block")].find((b) => b.querySelector(".tl-block-title").textContent === "Changed by you");
  assert.ok(changed, "the Changed by you block is drawn");
  const rows = (box) => {
    const cells = [...box.querySelector(".tl-diff").children].map((n) => n.textContent);
    const out = [];
    for (let i = 0; i < cells.length; i += 4) out.push(cells.slice(i, i + 4));
    return out;
  };
  assert.deepEqual(rows(changed), [
    ["argument", "The model's arguments", "Yours (what ran)", ""],
    ["database", '"users"', '"orders"', "changed"],
    ["since", '"yesterday"', "—", "removed"],
    ["limit", "—", "5", "added"],
  ]);
  // the tool's own block shows the same, beside what it ran with
  const tool = [...el.querySelectorAll(".tl-block")].find((b) => b.querySelector(".tl-block-title").textContent === "Tool read_log");
  assert.ok([...tool.querySelectorAll(".tl-sub")].some((n) => n.textContent === "Arguments (changed by you)"));
  assert.deepEqual(rows(tool)[1], ["database", '"users"', '"orders"', "changed"]);
});

test("a result replaced or a call answered by hand: old and new in two columns", async (t) => {
  const { el, push, dispose } = live(() => null);
  t.after(dispose);
  push([
    ev("intervention", 1, { action: "skip", stage: "tool_dispatch", tool_call_id: "call_1", before: { name: "read_log", args: { database: "users" } }, after: { content: "users: OK (by hand) <b>x</b>", status: "success" } }),
    ev("intervention", 1, { action: "edit_result", stage: "model_call", tool_call_id: "call_1", before: { content: "users: FAILED", status: "success" }, after: { content: "users: OK", status: "error" } }),
  ]);
  await frame();
  const changed = [...el.querySelectorAll(".tl-block")].find((b) => b.querySelector(".tl-block-title").textContent === "Changed by you");
  const pairs = [...changed.querySelectorAll(".tl-sxs")].map((sxs) => [...sxs.querySelectorAll(".tl-sxs-col")].map((c) => c.textContent));
  assert.equal(pairs.length, 2);
  assert.ok(pairs[0][0].startsWith("The call (never ran)read_log"));
  assert.equal(pairs[0][1], "Your answerusers: OK (by hand) <b>x</b>");
  assert.deepEqual(pairs[1], ["The tool's resultusers: FAILED", "Yours (what the model read)users: OKsent as an error"]);
  assert.equal(changed.querySelectorAll("b").length, 0);
});

test("after Continue the selector says this run will not pause again; the next run's mode stays", async (t) => {
  const { el, push, dispose } = live(() => null, "both");
  t.after(dispose);
  await frame(DRAW);
  const note = el.querySelector(".tl-pause-note");
  const select = el.querySelector(".tl-controls select");
  assert.equal(note.hidden, true);
  assert.equal(select.value, "both");
  push([], { paused_at: null, continued: true });
  await frame(DRAW);
  assert.equal(note.hidden, false);
  assert.equal(note.textContent, "off for this run (Continue); the next run pauses before both");
  assert.equal(select.value, "both"); // the mode for the next run, as set
  push([ev("loop_finish", 1, { final_text: "done", rounds: 1, usage, budget_exhausted: false, synthesis_was_run: false, synthesis_reason: null, outcome: "final_answer" })], { running: false, continued: false });
  await frame(DRAW);
  assert.equal(note.hidden, true);
});

/** A host that answers Step and Continue with an edit as Python does: the edit is checked, then made, or refused. */
const python = (msg) => {
  if (msg.action === "check_args") return typeof msg.args.database === "string" ? { ok: true } : { ok: false, reason: "invalid_args", message: "database: Input should be a valid string" };
  if (msg.type !== "control") return null;
  const args = msg.change && msg.change.args;
  if (args && typeof args.database !== "string") return { ok: false, action: msg.action, reason: "invalid_args", message: "database: Input should be a valid string" };
  return { ok: true, action: msg.action };
};

async function editArgs(el, text) {
  byText(el, "button", "Edit arguments…").click();
  await frame();
  const area = el.querySelector(".tl-editor textarea");
  area.value = text;
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
}

for (const [label, action] of [["Step", "step"], ["Continue", "continue"]]) {
  test(`${label} with an argument edit open applies the edit first: it goes with the click, never the model's arguments alone`, async (t) => {
    const { el, s, sent, push, dispose } = live(python);
    t.after(dispose);
    await frame();
    await editArgs(el, '{"database": "orders"}');
    await frame(420); // the live check says they fit
    const button = byText(el, ".tl-controls button", label);
    button.click();
    const released = sent.filter((m) => m.type === "control");
    assert.deepEqual(
      released.map(({ request, ...m }) => m),
      [{ type: "control", action, pause: 2, change: { type: "intervene", pause: 2, action: "edit_args", call_id: "call_1", args: { database: "orders" } } }],
    );
    // said before the click, where the person looks: the button's tooltip and the editor
    assert.match(button.title, /^Apply the edit you have open, then/);
    assert.equal(el.querySelector(".tl-edit-release").textContent, "Step and Continue apply it first");
    assert.equal(typeof released[0].request, "number"); // answered: a refusal is said next to the edit
    assert.match(el.querySelector(".tl-edit-msg").textContent, /^Applying your edit, then/);
    await frame(); // Python made the edit and let the loop go on
    assert.equal(s.ui.edit, null);
    push([], { paused_at: null });
    await frame(DRAW);
    assert.equal(el.querySelector(".tl-editor"), null);
  });

  test(`${label} with an argument edit Python refuses is refused, with the reason next to the edit; the pause holds`, async (t) => {
    const { el, sent, dispose } = live(python);
    t.after(dispose);
    await frame();
    await editArgs(el, '{"database": 7}');
    byText(el, ".tl-controls button", label).click(); // before the live check said anything
    await frame(DRAW);
    const said = el.querySelector(".tl-editor .tl-edit-msg").textContent;
    assert.equal(said, `${label} refused (invalid_args): database: Input should be a valid string — your edit was not applied; the run is unchanged and still paused. Fix it or cancel it (Esc), then ${label} again.`);
    assert.ok(el.querySelector(".tl-editor .tl-edit-error"));
    assert.equal(sent.filter((m) => m.type === "control" && !m.change).length, 0); // no release without the edit
    // arguments known to be wrong, or not JSON, are not sent at all: the words say why
    sent.length = 0;
    await typeArgs(el, "{not json");
    byText(el, ".tl-controls button", label).click();
    await frame();
    assert.match(el.querySelector(".tl-editor .tl-edit-msg").textContent, new RegExp(`^${label} waits for your edit: Not valid JSON`));
    assert.deepEqual(sent.filter((m) => m.type === "control"), []);
  });
}

test("Step with an editor left as it opened closes it and steps as it is", async (t) => {
  const { el, s, sent, dispose } = live(python);
  t.after(dispose);
  await frame();
  byText(el, "button", "Edit arguments…").click();
  await frame();
  byText(el, ".tl-controls button", "Step").click();
  assert.deepEqual(sent.filter((m) => m.type === "control"), [{ type: "control", action: "step" }]);
  assert.equal(s.ui.edit, null);
});

test("Step with an answer written by hand open applies it: the call is skipped with it", async (t) => {
  const { el, sent, dispose } = live(python);
  t.after(dispose);
  await frame();
  byText(el, "button", "Skip with result…").click();
  await frame();
  const area = el.querySelector(".tl-editor textarea");
  area.value = "users: OK (by hand)";
  area.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  byText(el, ".tl-controls button", "Step").click();
  const [released] = sent.filter((m) => m.type === "control");
  assert.deepEqual(released.change, { type: "intervene", pause: 2, action: "skip", call_id: "call_1", content: "users: OK (by hand)", status: "success" });
});

test("Step clicked while the edit's own button is on its way goes once the edit is made", async (t) => {
  const applied = [];
  const { el, sent, push, dispose } = live((msg) => (msg.action === "edit_args" ? (applied.push(msg), null) : python(msg)));
  t.after(dispose);
  await frame();
  await editArgs(el, '{"database": "orders"}');
  await frame(420);
  byText(el, ".tl-editor button", "Run with these arguments").click();
  byText(el, ".tl-controls button", "Step").click();
  assert.equal(el.querySelector(".tl-editor .tl-edit-msg").textContent, "Applying your edit, then stepping…");
  assert.deepEqual(sent.filter((m) => m.type === "control"), []); // not before the edit is made
  push([], { answer: { request: applied[0].request, action: "edit_args", ok: true } }); // Python made it
  assert.deepEqual(sent.filter((m) => m.type === "control"), [{ type: "control", action: "step" }]);
});
