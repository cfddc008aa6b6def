// @ts-check
// The debugger widget's own ES module (its `_esm`), shipped as written: a loader. The front
// end itself (static/debugger.js and its stylesheet) lives once per kernel in a hidden model
// (_widget/frontend.py), so a saved notebook holds it once however many debuggers it shows.
// This reads that model, imports the module once per page and version, adds the stylesheet
// once where the view is drawn (the page's head; or the shadow root a front end such as
// marimo draws a widget in, which the page's styles do not reach), and hands each debugger
// to the front end's own initialize and render.

/**
 * @typedef {object} Model the part of anywidget's model this uses
 * @property {(name: string) => any} get
 * @property {{get_model: (id: string) => Promise<{get: (name: string) => any}>}} widget_manager
 */
/**
 * @typedef {object} Widget what the front end's default export makes, once per model
 * @property {(ctx: {model: Model}) => any} [initialize]
 * @property {(ctx: {model: Model, el: HTMLElement}) => any} render
 */

const KEY = "__toolloopFrontEnds";
const PREFIX = "IPY_MODEL_";

/** @returns {Map<string, Promise<() => Widget>>} the front ends imported on this page, by version */
function imported() {
  const g = /** @type {any} */ (globalThis);
  if (!g[KEY]) g[KEY] = new Map();
  return g[KEY];
}

/** @type {Map<string, CSSStyleSheet>} the stylesheet of each version, made once */
const sheets = new Map();

/**
 * Give the shadow root `el` is drawn in (if any) the front end's stylesheet, once: the
 * page's own styles stop at a shadow root's edge, its theme's variables do not.
 * @param {HTMLElement} el
 * @param {string} version
 * @param {string} css
 */
function styleRoot(el, version, css) {
  const root = el.getRootNode();
  if (typeof ShadowRoot === "undefined" || !(root instanceof ShadowRoot)) return false;
  let sheet = sheets.get(version);
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    sheets.set(version, sheet);
  }
  if (!root.adoptedStyleSheets.includes(sheet)) root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  return true;
}

/**
 * Style `el`'s shadow root now, or once `el` is in the page (a front end may render it
 * before it attaches it).
 * @param {HTMLElement} el
 * @param {{version: string, css: string}} fe
 */
function styleWhereDrawn(el, fe) {
  if (el.isConnected) {
    styleRoot(el, fe.version, fe.css);
    return;
  }
  let tries = 0;
  const again = () => {
    if (el.isConnected) styleRoot(el, fe.version, fe.css);
    else if (++tries < 600) requestAnimationFrame(again);
  };
  requestAnimationFrame(again);
}

/**
 * The front end this debugger names, imported once per page and version.
 * @param {Model} model
 * @returns {Promise<{make: () => Widget, version: string, css: string}>}
 */
async function load(model) {
  const ref = String(model.get("_front_end") || "");
  const fe = await model.widget_manager.get_model(ref.startsWith(PREFIX) ? ref.slice(PREFIX.length) : ref);
  const version = String(fe.get("version"));
  const css = String(fe.get("css"));
  const cache = imported();
  let made = cache.get(version);
  if (!made) {
    made = (async () => {
      const style = document.createElement("style");
      style.dataset.toolloopFrontEnd = version;
      style.textContent = css;
      document.head.append(style);
      const url = URL.createObjectURL(new Blob([String(fe.get("code"))], { type: "text/javascript" }));
      try {
        return (await import(url)).default;
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
    cache.set(version, made);
  }
  return { make: await made, version, css };
}

/** @returns {{initialize: (ctx: {model: Model}) => Promise<any>, render: (ctx: {model: Model, el: HTMLElement}) => Promise<any>}} */
export default () => {
  /** @type {Promise<{widget: Widget, version: string, css: string}> | null} */
  let widget = null;
  /** @param {Model} model */
  const made = (model) => (widget = widget || load(model).then((fe) => ({ widget: fe.make(), version: fe.version, css: fe.css })));
  return {
    async initialize(ctx) {
      const w = (await made(ctx.model)).widget;
      return w.initialize ? w.initialize(ctx) : undefined;
    },
    async render(ctx) {
      const fe = await made(ctx.model);
      styleWhereDrawn(ctx.el, fe);
      return fe.widget.render(ctx);
    },
  };
};
