// The link protocol (link.js) and the store it feeds: epochs, gaps, duplicates, resets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadCase, src } from "./fixtures.mjs";

const { accept, createLink } = await import(src("link.js"));
const { createStore, receive } = await import(src("store.js"));
const widget = (await import(src("debugger.js"))).default;

const batch = (epoch, first, events, extra = {}) => ({ type: "events", epoch, first, reset: first === 0, events, now: null, control: null, ...extra });
const settle = () => new Promise((r) => setTimeout(r, 20)); // the fold drains in slices

test("the verdicts of the protocol", () => {
  const link = createLink();
  assert.equal(accept(link, { type: "hello" }), "ignore");
  assert.equal(accept(link, null), "ignore");
  assert.equal(accept(link, batch(1, 3, [{}])), "gap"); // joined mid-stream
  assert.equal(accept(link, batch(1, 0, [{}, {}])), "restart");
  assert.deepEqual(link, { epoch: 1, received: 2 });
  assert.equal(accept(link, batch(1, 2, [{}])), "take");
  assert.equal(accept(link, batch(1, 2, [{}])), "duplicate");
  assert.equal(accept(link, batch(1, 0, [{}], { reset: false })), "duplicate");
  assert.equal(accept(link, batch(1, 5, [{}])), "gap");
  assert.equal(accept(link, batch(0, 0, [{}])), "stale");
  assert.deepEqual(link, { epoch: 1, received: 3 });
  assert.equal(accept(link, batch(2, 0, [{}])), "restart");
  assert.deepEqual(link, { epoch: 2, received: 1 });
});

test("batches in order are folded once; a duplicate is not folded twice", async () => {
  const events = loadCase("single_round");
  const s = createStore();
  assert.equal(receive(s, batch(1, 0, events.slice(0, 4))), true);
  assert.equal(receive(s, batch(1, 4, events.slice(4))), true);
  await settle();
  assert.equal(s.run.status, "finished");
  const calls = s.run.rounds[0].tools.length;
  const conversation = s.run.conversation.length;
  assert.equal(receive(s, batch(1, 4, events.slice(4))), true); // sent again
  await settle();
  assert.equal(s.run.rounds[0].tools.length, calls);
  assert.equal(s.run.conversation.length, conversation);
  assert.equal(s.link.received, events.length);
});

test("a batch that skips ahead is a gap: not folded, and the widget says hello", async () => {
  const events = loadCase("multi_round");
  const handlers = {};
  const sent = [];
  const model = {
    get: () => undefined,
    set() {},
    save_changes() {},
    send: (m) => sent.push(m),
    on: (name, fn) => (handlers[name] = fn),
    off() {},
  };
  const w = widget();
  w.initialize({ model });
  assert.deepEqual(sent, [{ type: "hello" }]); // a new front end asks for everything
  handlers["msg:custom"](batch(1, 0, events.slice(0, 3)));
  await settle();
  handlers["msg:custom"](batch(1, 6, events.slice(6))); // events 3..5 never came
  await settle();
  assert.deepEqual(sent, [{ type: "hello" }, { type: "hello" }]);
  handlers["msg:custom"](batch(2, 0, events)); // Python replays under a new epoch
  await settle();
  assert.equal(sent.length, 2);
});

test("a gap, then the replay: the store folds every event exactly once", async () => {
  const events = loadCase("multi_round");
  const s = createStore();
  receive(s, batch(1, 0, events.slice(0, 3)));
  assert.equal(receive(s, batch(1, 6, events.slice(6))), false);
  await settle();
  assert.equal(s.run.status, "running");
  receive(s, batch(2, 0, events));
  await settle();
  assert.equal(s.run.status, "finished");
  assert.equal(s.run.rounds.length, 3);
  assert.deepEqual(s.run.rounds.map((r) => r.tools.length), [1, 1, 0]);
});

test("an older epoch's message is ignored, even one that starts at 0", async () => {
  const first = loadCase("single_round");
  const second = loadCase("multi_round");
  const s = createStore();
  receive(s, batch(3, 0, second));
  await settle();
  assert.equal(receive(s, batch(2, 0, first)), true);
  await settle();
  assert.equal(s.run.runId, second[0].run_id);
  assert.equal(s.run.rounds.length, 3);
});

test("reset: a new epoch forgets the run shown and folds the new one", async () => {
  const first = loadCase("single_round");
  const second = loadCase("token_budget");
  const s = createStore();
  receive(s, batch(1, 0, first));
  await settle();
  assert.equal(s.run.outcome, "final_answer");
  receive(s, batch(2, 0, second));
  await settle();
  assert.equal(s.source, "live");
  assert.equal(s.run.runId, second[0].run_id);
  assert.equal(s.run.outcome, "token_budget_exhausted");
  assert.equal(s.run.rounds.length, 2);
});

test("the control state a batch carries answers the request waiting for it, once", () => {
  const s = createStore();
  const answers = [];
  s.requests.pending.set(7, (a) => answers.push(a));
  const control = { paused_at: null, running: true, note: "hi", stopped_by_user: false, answer: { request: 7, ok: true } };
  receive(s, batch(1, 0, [], { control }));
  receive(s, batch(1, 0, [], { control, reset: false })); // a duplicate: not taken again
  assert.deepEqual(answers, [{ request: 7, ok: true }]);
  assert.equal(s.control.note, "hi");
});

test("every answer a message carries reaches the request waiting for it, whatever its batch's verdict", () => {
  const s = createStore();
  const got = [];
  for (const n of [3, 4, 5, 6]) s.requests.pending.set(n, (a) => got.push([n, a.reason]));
  const control = (answers) => ({ paused_at: null, running: true, note: null, stopped_by_user: false, answer: answers[answers.length - 1], answers });
  const refused = (n, reason) => ({ request: n, ok: false, reason, message: `refused ${n}` });
  receive(s, batch(1, 0, [{}], { control: control([]) }));
  // two answers given before one message went out: both reach their requests
  receive(s, batch(1, 1, [], { control: control([refused(3, "not_paused"), refused(4, "failed")]) }));
  // a batch that is a duplicate, of an older epoch, or after a gap: its answers count all the same
  receive(s, batch(1, 0, [], { reset: false, control: control([refused(5, "unknown_request")]) }));
  assert.equal(receive(s, batch(1, 9, [{}], { control: control([refused(6, "bad_request")]) })), false);
  assert.deepEqual(got, [
    [3, "not_paused"],
    [4, "failed"],
    [5, "unknown_request"],
    [6, "bad_request"],
  ]);
  assert.equal(s.requests.pending.size, 0);
});
