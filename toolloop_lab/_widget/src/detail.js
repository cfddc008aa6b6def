// @ts-check
// The detail pane: the selected round (or the newest) with its waterfall, what the model
// was sent, its reply, each tool call, the budget checks and what a person changed; at a
// pause, what the loop is about to send or run. The pane is as tall as what it shows (up to
// a cap, then it scrolls); while a run is live it only grows, so following the newest round
// never makes the page below jump.

import { callInput } from "./chat.js";
import { block, button, h } from "./dom.js";
import { count, plural } from "./format.js";
import { prettyJson } from "./json.js";
import { textView } from "./prose.js";
import { aboutToRun, aboutToSend } from "./pause.js";
import { isDone } from "./run.js";
import { roundTitle, selectedRound } from "./rounds.js";
import { gatesView, interventionsView, replyBlock, summaryBlock, toolBlock } from "./blocks.js";
import { waterfall } from "./waterfall.js";
import { SYNTH } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {ReturnType<typeof import("./editor.js").createEditor>} Editor */

/**
 * @param {ViewContext} ctx
 * @param {{forkBtn: HTMLElement, forkMsg: HTMLElement}} fork the fork's button and message, in the pane's head
 * @param {() => void} drawFork
 * @param {Editor} editor the pause's editor (shared with Step and Continue)
 */
export function createDetail(ctx, fork, drawFork, editor) {
  const s = ctx.s;
  const followBtn = button("Follow newest", null, () => {
    s.ui.selected = null;
    s.ui.follow = true;
    ctx.redraw(true);
  });
  const detailTitle = h("span", "tl-detail-title");
  const detailHead = h("div", "tl-detail-head", detailTitle, h("span", "tl-grow"), fork.forkBtn, followBtn);
  const detailBody = h("div", "tl-detail-body");
  const detail = h("div", "tl-detail", detailHead, fork.forkMsg, detailBody);
  let detailTop = 0;
  let detailKey = "";
  detailBody.addEventListener("scroll", () => (detailTop = detailBody.scrollTop), { passive: true });
  let floor = 0; // the tallest the pane has been while the run is live
  let growing = false;
  const sized = typeof ResizeObserver === "function" ? new ResizeObserver(() => grow()) : null;
  if (sized) sized.observe(detailBody);
  function grow() {
    if (!growing) return;
    const height = detailBody.offsetHeight; // read after layout (a resize callback): no extra layout
    if (height > floor) {
      floor = height;
      detailBody.style.minHeight = `${height}px`;
    }
  }

  function draw() {
    drawFork();
    const r = selectedRound(s);
    const run = s.run;
    followBtn.hidden = s.ui.follow || s.ui.selected === null;
    const pausedAt = s.control.paused_at && !isDone(run) ? s.control.paused_at : null;
    const paused = pausedAt ? JSON.stringify(pausedAt) : "";
    growing = !isDone(run) && run.status !== "idle";
    if (!growing && floor) {
      floor = 0;
      detailBody.style.minHeight = "";
    }
    if (s.ui.edit && (!pausedAt || s.ui.edit.pause !== pausedAt.pause)) s.ui.edit = null; // the loop went on
    const key = r ? `${r.n}:${r.v}:${paused}:${run.conversation.length}:${run.status}` : `none:${run.status}`;
    if (key === detailKey) return;
    const sameRound = detailKey.split(":")[0] === (r ? String(r.n) : "none");
    detailKey = key;
    const scrollTop = detailTop; // kept by a scroll listener: no layout read while drawing
    ctx.liveDetail = [];
    detailBody.textContent = "";
    if (!r) {
      detailTitle.textContent = "Round details";
      detailBody.append(h("div", "tl-muted", "The selected round shows here: what the model was sent, its reply, each tool call and its result."));
      if (paused) detailBody.append(aboutToSend(ctx, editor));
      return;
    }
    detailTitle.textContent = roundTitle(s, r) + (s.ui.follow || s.ui.selected === null ? " (newest)" : "");
    detailBody.append(waterfall(ctx, r));
    const c = r.call;
    const newest = r === run.rounds[run.rounds.length - 1];
    const pausedBeforeCall = !!pausedAt && pausedAt.stage === "model_call" && newest;
    if (pausedBeforeCall && !(c && !c.done && c.msgFrom !== null)) detailBody.append(aboutToSend(ctx, editor));
    if (pausedAt && pausedAt.stage === "tool_dispatch" && newest && pausedAt.calls) detailBody.append(aboutToRun(ctx, editor));
    const synth = r.synthesis;
    if (synth) detailBody.append(block(s.ui.collapsed, `r${r.n}:synth`, "Why a final-answer call", () => h("div", null, h("div", "tl-meta", `Reason: ${SYNTH[synth.reason] || synth.reason}`), textView(synth.prompt)), { copy: synth.prompt, open: false }));
    if (c && c.msgFrom !== null && c.msgTo !== null && c.msgTo + s.omittedMessages === 0) {
      // every model call is sent something: none recorded means not known (yet), never "0"
      const when = c.done ? "its source did not record it" : "its source records it when the call ends";
      detailBody.append(h("div", "tl-muted tl-pad", `What the model was sent is not known: ${when}.`));
    } else if (c && c.msgFrom !== null && c.msgTo !== null) {
      const n = c.msgTo - c.msgFrom;
      const to = c.msgTo + s.omittedMessages; // a saved run: what rounds left out of the file sent too
      const verb = pausedBeforeCall && !c.done ? "About to send" : "Sent to the model";
      detailBody.append(block(s.ui.collapsed, `r${r.n}:in`, `${verb} (${plural(to, "message")}, ${count(n)} new)`, () => callInput(s, c), { copy: () => prettyJson(s.run.conversation.slice(0, to)) }));
    } else if (c) {
      detailBody.append(h("div", "tl-muted tl-pad", "This trace does not record what the model was sent (it predates model_call_start events)."));
    }
    if (c) detailBody.append(replyBlock(ctx, r, c));
    for (const t of r.tools) detailBody.append(toolBlock(ctx, r, t));
    r.summaries.forEach((c, i) => detailBody.append(summaryBlock(ctx, r, c, i)));
    if (r.gates.length) detailBody.append(block(s.ui.collapsed, `r${r.n}:gates`, "Budget checks", () => gatesView(r), { open: r.gates.some((g) => !g.passed) }));
    if (r.interventions.length) detailBody.append(block(s.ui.collapsed, `r${r.n}:iv`, "Changed by you", () => interventionsView(r), { copy: () => prettyJson(r.interventions) }));
    if (sameRound && scrollTop) detailBody.scrollTop = scrollTop;
    else detailTop = 0;
  }

  return {
    nodes: { detail },
    draw,
    forget() {
      detailKey = "";
    },
    dispose() {
      if (sized) sized.disconnect();
    },
  };
}
