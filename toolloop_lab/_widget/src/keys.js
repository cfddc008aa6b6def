// @ts-check
// Moving around with keys, in the round list and the whole-run timeline alike: arrows a
// round at a time, Home and End the first and the last, PageUp and PageDown a page, n and
// p the next and the previous round with an error. Keys are taken only while the list or
// the timeline itself has the focus, never from a place where a person types, and never
// with a modifier held: the notebook keeps every other key. The other way round, the keys a
// notebook acts on (Shift+Enter runs the cell, Escape leaves edit mode) never leave a field
// of the widget a person types in (keepFieldKeys).

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

/**
 * Whether the notebook would act on `ev` even while a person types in a field: Enter with
 * a modifier (JupyterLab and Notebook 7 run the cell: Shift, Ctrl or Cmd, Alt) or Escape.
 * @param {{key: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean, shiftKey?: boolean}} ev
 * @returns {boolean}
 */
export function notebookKey(ev) {
  if (ev.key === "Escape") return true;
  return ev.key === "Enter" && !!(ev.shiftKey || ev.ctrlKey || ev.metaKey || ev.altKey);
}

// Lumino (JupyterLab's and Notebook 7's shortcut engine) matches no shortcut for a key whose
// target sits inside an element with this attribute.
const SUPPRESS = "data-lm-suppress-shortcuts";
const MARKER = Symbol.for("toolloop_lab.fieldKeys");

// A modifier pressed alone: JupyterLab, hearing one, holds back the next line break typed
// in a notebook cell (it waits to see whether a shortcut follows), so Shift+Enter would
// write no new line in the widget's editor unless Shift stays in the widget too.
const MODIFIERS = new Set(["Shift", "Control", "Alt", "Meta"]);

/**
 * The field of one of the widget's views `ev` was typed in, when `ev` is a key to keep
 * from the notebook (`also`: a modifier alone too); null otherwise.
 * @param {KeyboardEvent} ev
 * @param {boolean} also
 * @returns {HTMLElement | null}
 */
function ourFieldKey(ev, also) {
  const el = /** @type {HTMLElement | null} */ (ev.target);
  if (!(notebookKey(ev) || (also && MODIFIERS.has(ev.key)))) return null;
  return el && typing(el) && el.closest(".tl-root") ? el : null;
}

// The keys a focused list of the widget moves by (Notebook 7 would move between cells).
const LIST_KEYS = new Set(["ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", "Enter", " "]);

/**
 * The widget's run list, when `ev` is one of its keys pressed while it has the focus.
 * @param {KeyboardEvent} ev
 * @returns {HTMLElement | null}
 */
function ourListKey(ev) {
  const el = /** @type {HTMLElement | null} */ (ev.target);
  if (!el || !LIST_KEYS.has(ev.key) || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return null;
  return el.classList && el.classList.contains("tl-runs-scroller") && el.closest(".tl-root") ? el : null;
}

/**
 * Keep the notebook's keys typed in `root`'s fields inside the widget. JupyterLab listens
 * for its shortcuts on the document while the key bubbles up (stopped here, at the root);
 * Notebook 7 listens while it travels down, before any element below the window hears it,
 * so a listener on the window marks the field for Lumino to skip, for this key only (the
 * mark is gone before the next key: Ctrl+S still saves from the field).
 * @param {HTMLElement} root
 * @returns {() => void} what removes the root's listener
 */
export function keepFieldKeys(root) {
  const win = /** @type {any} */ (root.ownerDocument.defaultView);
  if (win && !win[MARKER]) {
    win[MARKER] = true;
    win.addEventListener(
      "keydown",
      (/** @type {KeyboardEvent} */ ev) => {
        const field = ourFieldKey(ev, false) || ourListKey(ev);
        if (!field || field.hasAttribute(SUPPRESS)) return;
        field.setAttribute(SUPPRESS, "");
        setTimeout(() => field.removeAttribute(SUPPRESS), 0);
      },
      true,
    );
  }
  /** @param {KeyboardEvent} ev */
  const stop = (ev) => {
    if (ourFieldKey(ev, true)) ev.stopPropagation();
  };
  root.addEventListener("keydown", stop);
  return () => root.removeEventListener("keydown", stop);
}
