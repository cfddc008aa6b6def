// @ts-check
// A long run of messages, drawn a window at a time: "Show 40 more" reaches back 40 at a
// time, "Show all" jumps to the first, "Next" and "Newest" page on. However long the
// conversation (4,000 messages, or 40,000), at most WINDOW messages are drawn at once, so
// the page stays within the widget's DOM budget; where the window sits survives redraws.

import { button, h } from "./dom.js";
import { count, plural } from "./format.js";

export const STEP = 40; // messages "Show 40 more" adds
export const WINDOW = 120; // messages drawn at once, at most

/** @typedef {{a: number, b: number}} Span the messages drawn: from a up to (not with) b */

/** @type {WeakMap<object, Map<string, Span>>} where each pager of an owner (a call) sits */
const SPANS = new WeakMap();

/**
 * @param {object} owner
 * @param {string} key
 * @param {Span} start
 * @returns {Span}
 */
function spanOf(owner, key, start) {
  let spans = SPANS.get(owner);
  if (!spans) SPANS.set(owner, (spans = new Map()));
  let span = spans.get(key);
  if (!span) spans.set(key, (span = start));
  return span;
}

/**
 * @typedef {object} Pager
 * @property {object} owner what the window's place is kept with (a call: it outlives redraws)
 * @property {string} key which of the owner's pagers
 * @property {number} lo the first message of the run of messages
 * @property {number} hi ... and the one after its last
 * @property {number} initial messages drawn at first (the newest)
 * @property {(i: number) => Node} draw message i, drawn
 * @property {(n: number) => string} hidden "3,999 earlier messages": what the top bar says is not drawn
 */

/**
 * Messages lo..hi-1 drawn a bounded window at a time, with the buttons that move it.
 * @param {Pager} p
 * @returns {HTMLElement}
 */
export function messagePager(p) {
  const { lo, hi } = p;
  const span = spanOf(p.owner, p.key, { a: Math.max(lo, hi - p.initial), b: hi });
  const box = h("div", "tl-pager");
  /** @param {number} a @param {number} b @param {string} [again] the button to focus after */
  const move = (a, b, again) => {
    span.a = Math.max(lo, a);
    span.b = Math.min(hi, Math.max(span.a, b));
    draw();
    const next = again ? [...box.querySelectorAll("button")].find((x) => x.textContent && x.textContent.startsWith(again)) : null;
    (next || box).focus();
  };
  box.tabIndex = -1;
  function draw() {
    const { a, b } = span;
    box.textContent = "";
    if (a > lo) {
      const bar = h("div", "tl-pager-bar", h("span", "tl-meta", p.hidden(a - lo)));
      if (a - lo > STEP) {
        // reaching back past the window drops the newest drawn: the window never grows past WINDOW
        bar.append(button(`Show ${count(STEP)} more`, "tl-more", () => move(a - STEP, Math.min(b, a - STEP + WINDOW), "Show"), "Draw earlier messages"));
      }
      bar.append(button("Show all", "tl-more", () => move(lo, lo + WINDOW, "Next"), hi - lo > WINDOW ? `From the first message, ${count(WINDOW)} at a time` : "Draw every message"));
      box.append(bar);
    }
    if ((a > lo || b < hi) && b > a) box.append(h("div", "tl-meta tl-pager-at", `messages ${count(a - lo + 1)}–${count(b - lo)} of ${count(hi - lo)}`));
    const frag = document.createDocumentFragment();
    for (let i = a; i < b; i++) frag.append(p.draw(i));
    box.append(frag);
    if (b < hi) {
      const next = Math.min(WINDOW, hi - b);
      box.append(
        h(
          "div",
          "tl-pager-bar",
          h("span", "tl-meta", `${plural(hi - b, "later message")} not drawn`),
          button(`Next ${count(next)}`, "tl-more", () => move(b + next - WINDOW, b + next, "Next"), "Draw the messages after these"),
          button("Newest", "tl-more", () => move(hi - Math.max(p.initial, Math.min(WINDOW, STEP)), hi, "Show"), "Back to the newest messages"),
        ),
      );
    }
  }
  draw();
  return box;
}
