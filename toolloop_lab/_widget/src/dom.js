// @ts-check
// Building the page, text only: every string reaches the DOM through createTextNode or
// textContent; no HTML is ever parsed from data. Strings pass format.js's `visible` on the
// way (a bidirectional control is shown as its code, never obeyed).

import { count, visible } from "./format.js";

const PREVIEW_CHARS = 4000; // text shown before "show all"

/** @typedef {Node | string | null | undefined | false} Kid */

/**
 * An element of class `cls` holding `kids` (strings become text nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string | null} [cls]
 * @param {...Kid} kids
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, cls, ...kids) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    n.append(typeof k === "string" ? document.createTextNode(visible(k)) : k);
  }
  return n;
}

/**
 * @param {string} label
 * @param {string | null} cls
 * @param {(ev: MouseEvent) => void} onClick
 * @param {string} [title]
 * @returns {HTMLButtonElement}
 */
export function button(label, cls, onClick, title) {
  const b = h("button", "tl-btn" + (cls ? " " + cls : ""), label);
  b.type = "button";
  if (title) b.title = visible(title);
  b.addEventListener("click", onClick);
  return b;
}

/**
 * @param {[string, string][]} options value and text of each option
 * @param {string} [label]
 * @returns {HTMLSelectElement}
 */
export function dropdown(options, label) {
  const sel = h("select", "tl-select");
  for (const [value, text] of options) {
    const o = h("option", null, text);
    o.value = value;
    sel.append(o);
  }
  if (label) sel.setAttribute("aria-label", label);
  return sel;
}

/**
 * A coloured dot for a state (answer, error, running, warn, stopped, paused, idle…).
 * @param {string} state
 * @returns {HTMLSpanElement}
 */
export function dot(state) {
  const d = h("span", `tl-dot tl-${state}`);
  d.setAttribute("aria-hidden", "true");
  return d;
}

/**
 * Copy `text` to the clipboard; `btn` says whether it worked.
 * @param {string} text
 * @param {HTMLElement | null} btn
 */
export async function copyText(text, btn) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (_err) {
    const area = h("textarea", "tl-offscreen");
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand("copy");
    } catch (_e) {
      ok = false;
    }
    area.remove();
  }
  if (btn) {
    const was = btn.textContent;
    btn.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => (btn.textContent = was), 1200);
  }
}

/**
 * @typedef {object} BlockOptions
 * @property {string | (() => string)} [copy] what its Copy button copies (no button when absent)
 * @property {boolean} [open] open at first (default true)
 * @property {Node | null} [extra] shown beside the title
 */

/**
 * A titled block with its own collapse and copy buttons; its open state survives redraws
 * (kept in `collapsed` under `key`). The body is built when it is first opened.
 * @param {Map<string, boolean>} collapsedState
 * @param {string} key
 * @param {string} title
 * @param {Node | (() => Node)} body
 * @param {BlockOptions} [options]
 * @returns {HTMLElement}
 */
export function block(collapsedState, key, title, body, { copy, open = true, extra } = {}) {
  const collapsed = collapsedState.has(key) ? collapsedState.get(key) : !open;
  const wrap = h("section", "tl-block" + (collapsed ? " tl-collapsed" : ""));
  const toggle = h("button", "tl-btn tl-toggle", collapsed ? "Show" : "Hide");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", String(!collapsed));
  const head = h("div", "tl-block-head", h("span", "tl-block-title", title), extra || null, h("span", "tl-grow"));
  head.append(toggle);
  if (copy !== undefined) head.append(button("Copy", "tl-copy", (ev) => copyText(typeof copy === "function" ? copy() : copy, /** @type {HTMLElement} */ (ev.currentTarget)), "Copy to the clipboard"));
  const inner = h("div", "tl-block-body");
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    inner.append(typeof body === "function" ? body() : body);
  };
  if (!collapsed) build();
  toggle.addEventListener("click", () => {
    const now = !wrap.classList.contains("tl-collapsed");
    wrap.classList.toggle("tl-collapsed", now);
    toggle.textContent = now ? "Show" : "Hide";
    toggle.setAttribute("aria-expanded", String(!now));
    collapsedState.set(key, now);
    if (!now) build();
  });
  wrap.append(head, inner);
  return wrap;
}

/**
 * A long text, its first PREVIEW_CHARS shown until "Show all" is clicked.
 * @param {string} text
 * @param {string} [cls]
 * @returns {HTMLElement}
 */
export function longText(text, cls) {
  const pre = h("pre", "tl-text" + (cls ? " " + cls : ""));
  if (text.length <= PREVIEW_CHARS) {
    pre.textContent = visible(text);
    return pre;
  }
  pre.textContent = visible(text.slice(0, PREVIEW_CHARS));
  const more = button(`Show all ${count(text.length)} characters`, "tl-more", () => {
    pre.textContent = visible(text);
    more.remove();
  });
  return h("div", null, pre, more);
}
