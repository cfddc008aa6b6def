// @ts-check
// The debugger widget's own ES module (its `_esm`), shipped as written: a loader. The front
// end itself (static/debugger.js and its stylesheet) lives once per kernel in a hidden model
// (_widget/frontend.py), so a saved notebook holds it once however many debuggers it shows.
// This reads that model, imports the module once per page and version, adds the stylesheet
// once, and hands each debugger to the front end's own initialize and render.

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

/**
 * The front end this debugger names, imported once per page and version.
 * @param {Model} model
 * @returns {Promise<() => Widget>}
 */
async function load(model) {
  const ref = String(model.get("_front_end") || "");
  const fe = await model.widget_manager.get_model(ref.startsWith(PREFIX) ? ref.slice(PREFIX.length) : ref);
  const version = String(fe.get("version"));
  const cache = imported();
  let made = cache.get(version);
  if (!made) {
    made = (async () => {
      const style = document.createElement("style");
      style.dataset.toolloopFrontEnd = version;
      style.textContent = String(fe.get("css"));
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
  return made;
}

/** @returns {{initialize: (ctx: {model: Model}) => Promise<any>, render: (ctx: {model: Model, el: HTMLElement}) => Promise<any>}} */
export default () => {
  /** @type {Promise<Widget> | null} */
  let widget = null;
  /** @param {Model} model */
  const made = (model) => (widget = widget || load(model).then((make) => make()));
  return {
    async initialize(ctx) {
      const w = await made(ctx.model);
      return w.initialize ? w.initialize(ctx) : undefined;
    },
    async render(ctx) {
      return (await made(ctx.model)).render(ctx);
    },
  };
};
