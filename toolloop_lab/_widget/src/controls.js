// @ts-check
// A live run's step controls (pause before…, Continue, Step, Stop), the banner that says
// where the loop waits, and the box that says why a run failed or was stopped. A control
// that cannot act on the run shown (Python's control.reach: a bridged run, agent.run()
// blocking the kernel…) is disabled, its tooltip and a short hint beside it saying why.

import { button, dropdown, h, longText } from "./dom.js";
import { count, plural } from "./format.js";
import { budgetStop } from "./budget.js";
import { isDone } from "./run.js";
import { shown } from "./rounds.js";
import { OUTCOME } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {ReturnType<typeof import("./editor.js").createEditor>} Editor */

/**
 * @param {ViewContext} ctx
 * @param {Editor} editor the pause's editor: Step and Continue apply the change it holds first
 */
export function createControls(ctx, editor) {
  const { s, host } = ctx;
  const pauseSel = dropdown([
    ["off", "never"],
    ["model", "model calls"],
    ["tools", "tool runs"],
    ["both", "both"],
  ]);
  pauseSel.addEventListener("change", () => host.setPauseOn(pauseSel.value));
  const pauseLbl = h("label", "tl-lbl", "Pause before ", pauseSel);
  const tips = {
    pause: "Where the next run waits for Step or Continue",
    continue: "Let the run go on to its end without pausing again",
    step: "Go on to the next pause point",
    stop: "Stop the run; the partial counts stay",
    continueEdit: "Apply the edit you have open, then let the run go on to its end without pausing again",
    stepEdit: "Apply the edit you have open, then go on to the next pause",
  };
  const pauseNote = h("span", "tl-meta tl-pause-note"); // after Continue: this run pauses no more
  pauseNote.setAttribute("aria-live", "polite");
  /** @param {"continue" | "step"} action */
  const release = (action) => editor.release(action) || host.control(action);
  const bContinue = button("Continue", "tl-primary", () => release("continue"), tips.continue);
  const bStep = button("Step", null, () => release("step"), tips.step);
  const bStop = button("Stop", null, () => host.control("stop"), tips.stop);
  const reachHint = h("span", "tl-reach-hint");
  const controls = h("div", "tl-controls", pauseLbl, pauseNote, bContinue, bStep, bStop, reachHint);
  const banner = h("div", "tl-banner");
  const bannerText = h("div", "tl-banner-text");
  banner.append(bannerText);
  const failureBox = h("div", "tl-failure");

  function draw() {
    const isLive = !!host.live && s.source !== "static";
    controls.hidden = !isLive || s.source === "saved"; // saved in the file: no kernel has answered
    const done = isDone(s.run);
    const paused = !!s.control.paused_at && !done;
    const running = !!s.control.running && !done;
    const reach = s.control.reach || { stop: true, pause: true, why: null };
    const why = reach.why || "";
    bContinue.disabled = !paused || !reach.pause;
    bStep.disabled = !paused || !reach.pause;
    bStop.disabled = !(paused || running) || !reach.stop;
    pauseSel.disabled = !reach.pause;
    const editing = paused && !!s.ui.edit && s.ui.edit.pause === s.control.paused_at.pause; // Step and Continue apply it first
    bContinue.title = reach.pause ? (editing ? tips.continueEdit : tips.continue) : why;
    bStep.title = reach.pause ? (editing ? tips.stepEdit : tips.step) : why;
    pauseLbl.title = reach.pause ? tips.pause : why;
    bStop.title = reach.stop ? tips.stop : why;
    reachHint.hidden = !why;
    reachHint.textContent = reach.hint || why;
    reachHint.title = why;
    const mode = host.pauseOn();
    if (pauseSel.value !== mode) pauseSel.value = mode;
    const noMore = !!s.control.continued && !done && mode !== "off";
    pauseNote.hidden = !noMore;
    pauseNote.textContent = noMore ? `off for this run (Continue); the next run pauses before ${pauseSel.selectedOptions.length ? pauseSel.selectedOptions[0].textContent : mode}` : "";
    banner.hidden = !paused;
    bannerText.textContent = "";
    if (paused) drawBanner(s.control.paused_at);
    drawFailure();
  }

  /** @param {any} p where the loop waits */
  function drawBanner(p) {
    let where;
    if (p.stage === "tool_dispatch") where = `Paused before running ${(p.detail || []).length ? (p.detail || []).join(", ") : "the tools"} in round ${count(shown(s, p.round))}.`;
    else if (p.purpose === "synthesis") where = "Paused before the final-answer call.";
    else if (p.purpose === "pruning") where = `Paused before pruning a tool output in round ${count(shown(s, p.round))}.`;
    else where = `Paused before calling the model in round ${count(shown(s, p.round))}.`;
    bannerText.append(h("span", "tl-strong", where), " Step goes on to the next pause; Continue runs to the end.");
    if (p.editable) {
      const can = p.stage === "tool_dispatch" ? "You can edit a call's arguments or answer it yourself (below)." : (p.results || []).length ? "You can add a message or edit a result the model has not seen (below)." : "You can add a message (below).";
      bannerText.append(" ", h("span", "tl-meta", can));
    }
  }

  function drawFailure() {
    const f = s.run.failure;
    failureBox.textContent = "";
    failureBox.hidden = !f;
    if (!f) return;
    const stopped = f.cancelled;
    const budget = budgetStop(s.run, s.offset || 0); // a USD stop says how far it got, from its calls
    failureBox.className = `tl-failure ${stopped ? "tl-stopped-box" : budget ? "tl-budget-box" : "tl-error-box"}`;
    const head = stopped ? (s.control.stopped_by_user ? "Stopped by you" : OUTCOME.cancelled) : "The run failed";
    failureBox.append(h("div", "tl-strong", budget || `${head} after ${plural(f.rounds, "round")}`));
    const how = stopped && f.error_type === "CancelledError" ? null : f.error_type; // a Stop is no error to name
    const facts = [how, f.error_kind && `kind ${f.error_kind}`, f.reason && `reason ${f.reason}`, f.cause_type && `cause ${f.cause_type}`].filter(Boolean).join(" · ");
    failureBox.append(h("div", "tl-meta", facts));
    if (f.message && !stopped) failureBox.append(longText(f.message));
    if (f.partial_text) failureBox.append(h("div", "tl-meta", "Text streamed before it stopped:"), longText(f.partial_text));
  }

  return { nodes: { controls, banner, failureBox }, draw };
}
