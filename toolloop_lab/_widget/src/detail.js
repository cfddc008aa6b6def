// @ts-check
// The detail pane: the selected round (or the newest) with its waterfall, what the model
// was sent, its reply, each tool call, the budget checks and what a person changed; at a
// pause, what the loop is about to send or run. The pane is as tall as what it shows (up to
// a cap, then it scrolls); while a run is live it only grows, so following the newest round
// never makes the page below jump.

import { callInput } from "./chat.js";
import { block, button, dropdown, h, longText } from "./dom.js";
import { count, plural } from "./format.js";
import { prettyJson } from "./json.js";
import { textView } from "./prose.js";
import { aboutToRun, aboutToSend } from "./pause.js";
import { isDone } from "./run.js";
import { roundTitle, selectedRound } from "./rounds.js";
import { gatesView, interventionsView, replyBlock, summaryBlock, toolBlock } from "./blocks.js";
import { waterfall } from "./waterfall.js";
import { MCP, SYNTH, fill, word } from "./words.js";

const ALL_SERVERS = "\u0000all"; // the filter's "every tool" choice: no server's name starts with NUL

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {ReturnType<typeof import("./editor.js").createEditor>} Editor */

/**
 * @param {ViewContext} ctx
 * @param {{forkBtn: HTMLElement, forkMsg: HTMLElement, saveBtn: HTMLElement, saveMsg: HTMLElement}} fork the fork's and "Save as test"'s buttons and messages, in the pane's head
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
  // a filter by MCP server: only that server's calls in the round (shown once a run has one)
  let serverFilter = ALL_SERVERS;
  let serverNames = "";
  const serverSel = dropdown([[ALL_SERVERS, "every tool"]], "Show the tool calls of one MCP server");
  serverSel.hidden = true;
  serverSel.addEventListener("change", () => {
    serverFilter = serverSel.value;
    detailKey = "";
    draw();
  });
  /** The filter's choices: every tool, then each server the run named. */
  function drawServerFilter() {
    const names = [...s.run.servers.keys()];
    const key = names.join("\u0000");
    serverSel.hidden = names.length === 0;
    if (key === serverNames) return;
    serverNames = key;
    if (serverFilter !== ALL_SERVERS && !s.run.servers.has(serverFilter)) serverFilter = ALL_SERVERS;
    serverSel.textContent = "";
    for (const [value, text] of [[ALL_SERVERS, "every tool"], ...names.map((n) => [n, `server ${n}`])]) {
      const o = h("option", null, text);
      o.value = value;
      serverSel.append(o);
    }
    serverSel.value = serverFilter;
  }
  const detailHead = h("div", "tl-detail-head", detailTitle, h("span", "tl-grow"), serverSel, fork.saveBtn, fork.forkBtn, followBtn);
  const detailBody = h("div", "tl-detail-body");
  const detail = h("div", "tl-detail", detailHead, fork.forkMsg, fork.saveMsg, detailBody);
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
    drawServerFilter();
    const logged = [...run.servers.values()].map((v) => v.lastLine).join(",");
    const key = (r ? `${r.n}:${r.v}:${paused}:${run.conversation.length}:${run.status}` : `none:${run.status}`) + `:${serverFilter}:${logged}`;
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
    const shownTools = serverFilter === ALL_SERVERS ? r.tools : r.tools.filter((t) => t.server === serverFilter);
    for (const t of shownTools) detailBody.append(toolBlock(ctx, r, t));
    if (shownTools.length < r.tools.length) detailBody.append(h("div", "tl-muted tl-pad", `${plural(r.tools.length - shownTools.length, "call")} of other tools hidden by the server filter`));
    r.summaries.forEach((c, i) => detailBody.append(summaryBlock(ctx, r, c, i)));
    if (r.gates.length) detailBody.append(block(s.ui.collapsed, `r${r.n}:gates`, "Budget checks", () => gatesView(r), { open: r.gates.some((g) => !g.passed) }));
    if (r.interventions.length) detailBody.append(block(s.ui.collapsed, `r${r.n}:iv`, "Changed by you", () => interventionsView(r), { copy: () => prettyJson(r.interventions) }));
    for (const v of run.servers.values()) if (serverFilter === ALL_SERVERS || serverFilter === v.name) detailBody.append(serverBlock(s, v));
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

/**
 * One MCP server of the run: how it was reached, its calls, and its log (numbered lines).
 * @param {import("./store.js").Store} s
 * @param {import("./run.js").Server} v
 * @returns {HTMLElement}
 */
export function serverBlock(s, v) {
  const said = serverSaid(v);
  const body = () => {
    const box = h("div", "tl-server");
    box.append(h("div", "tl-meta", said));
    if (v.lines.size) {
      const lines = [...v.lines.entries()].map(([n, text]) => `${n}: ${text}`);
      box.append(longText(lines.join("\n"), "tl-server-log"));
    }
    return box;
  };
  return block(s.ui.collapsed, `server:${v.name}`, `Server ${v.name} log`, body, { copy: () => [...v.lines.values()].join("\n"), open: v.failed > 0 });
}

/**
 * A server in a line, as figures.server_said: ``MCP server inventory (stdio) · 4 calls, 1 failed · 12 lines logged``.
 * @param {import("./run.js").Server} v
 * @returns {string}
 */
export function serverSaid(v) {
  const transport = v.transport ? word(MCP, v.transport) : "?";
  let calls = v.calls === 1 ? MCP.call : fill(MCP.calls, { n: count(v.calls) });
  if (v.failed) calls += ", " + fill(MCP.failed, { n: count(v.failed) });
  const kept = v.lines.size;
  const total = v.lastLine;
  const logged = total === 0 ? MCP.log_none : kept < total ? fill(MCP.log_kept, { n: count(total), kept: count(kept) }) : fill(MCP.log_lines, { n: count(total) });
  return `${fill(MCP.server, { name: v.name, transport })} · ${calls} · ${logged}`;
}
