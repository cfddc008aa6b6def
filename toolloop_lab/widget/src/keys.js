// @ts-check
// Moving around with keys, in the round list and the whole-run timeline alike: arrows a
// round at a time, Home and End the first and the last, PageUp and PageDown a page, n and
// p the next and the previous round with an error. Keys are taken only while the list or
// the timeline itself has the focus, never from a place where a person types, and never
// with a modifier held: the notebook keeps every other key.

/** What a person reads about the keys (a tooltip, the timeline's hint). */
export const KEY_HINT = "Keys: ↑ ↓ (or ← →) a round, Home / End the first / last, PageUp / PageDown a page, n / p the next / previous error";

/** The short form shown beside the timeline. */
export const KEY_SHORT = "Home · End · PgUp · PgDn · n / p: next / previous error";

/** aria-keyshortcuts of the list and the timeline. */
export const KEY_ARIA = "ArrowUp ArrowDown ArrowLeft ArrowRight Home End PageUp PageDown N P";

/**
 * @typedef {object} Move what a key asks for
 * @property {"go" | "error"} kind go: to `index`; error: to the next error in `step`'s direction
 * @property {number} index where to go (kind "go")
 * @property {1 | -1} step the direction (kind "error")
 */

/**
 * Whether a key event comes from a place where a person types (an input, a text area, a
 * select, an editable element): such keys are never ours.
 * @param {EventTarget | null} target
 * @returns {boolean}
 */
export function typing(target) {
  const el = /** @type {HTMLElement | null} */ (target);
  if (!el || typeof el.closest !== "function") return false;
  return !!el.closest("input, textarea, select, [contenteditable]:not([contenteditable='false'])");
}

/**
 * What `ev` asks of a list of `n` rounds whose selected one is at `cur` (pages of `page`
 * rounds); null when the key is not one of ours (it is left to the page).
 * @param {{key: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean, shiftKey?: boolean, target?: EventTarget | null}} ev
 * @param {number} cur the selected round's place (the last when none is picked)
 * @param {number} n rounds in the list
 * @param {number} page rounds a page holds
 * @returns {Move | null}
 */
export function keyMove(ev, cur, n, page) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.shiftKey) return null;
  if (typing(ev.target || null)) return null;
  const at = (/** @type {number} */ i) => ({ kind: /** @type {"go"} */ ("go"), index: Math.min(n - 1, Math.max(0, i)), step: /** @type {1} */ (1) });
  switch (ev.key) {
    case "ArrowDown":
    case "ArrowRight":
      return at(cur + 1);
    case "ArrowUp":
    case "ArrowLeft":
      return at(cur - 1);
    case "Home":
      return at(0);
    case "End":
      return at(n - 1);
    case "PageDown":
      return at(cur + page);
    case "PageUp":
      return at(cur - page);
    case "n":
    case "N":
      return { kind: "error", index: -1, step: 1 };
    case "p":
    case "P":
      return { kind: "error", index: -1, step: -1 };
    default:
      return null;
  }
}

/**
 * The place of the nearest item after (step 1) or before (step -1) `from` for which `hit`
 * holds; -1 when there is none. A scan, stopping at the first hit.
 * @param {number} from
 * @param {1 | -1} step
 * @param {number} n
 * @param {(i: number) => boolean} hit
 * @returns {number}
 */
export function seek(from, step, n, hit) {
  for (let i = from + step; i >= 0 && i < n; i += step) if (hit(i)) return i;
  return -1;
}
