// @ts-check
// Painting the whole-run timeline on its one <canvas>: round bands (numbered where they
// fit), the slowest round shaded and labelled, the selected round outlined, a bar per
// cell (failed ones in the error colour, taller, with a marker above), growing bars
// hatched, nested runs' extents, and the time axis. Colours are the theme's, read from
// the widget's CSS variables at each paint (a theme switch repaints).

import { duration } from "./format.js";
import { ticks, tracksOf } from "./gantt_pack.js";

/** @typedef {import("./gantt_pack.js").Cell} Cell */
/** @typedef {import("./gantt_pack.js").Scale} Scale */
/** @typedef {import("./gantt_data.js").Nested} Nested */

export const STRIP_H = 24; // round numbers and failure markers above the lanes
export const LANE_H = 22; // one lane
export const AXIS_H = 18; // tick labels below the lanes
const BAR_H = 12;

/**
 * @typedef {object} Picture what one paint draws
 * @property {Scale} scale
 * @property {{cells: Cell[], nested: Nested | null}[]} lanes
 * @property {{x0: number, x1: number, label: string}[]} bands the rounds (every one, or none when too many to tell apart)
 * @property {{x0: number, x1: number, label: string} | null} slowest
 * @property {{x0: number, x1: number} | null} selected
 */

/**
 * Where a bar of row `track` of `tracks` sits in its lane (from the lane's top).
 * @param {number} tracks
 * @param {number} track
 * @param {boolean} failed a failed bar alone in its lane is drawn taller
 * @returns {{y: number, h: number}}
 */
export function rowBox(tracks, track, failed) {
  if (tracks <= 1) {
    const h = failed ? LANE_H - 6 : BAR_H;
    return { y: (LANE_H - h) / 2, h };
  }
  const each = (LANE_H - 4) / tracks;
  return { y: 2 + track * each, h: each - 1 };
}

/**
 * The row of a lane of `tracks` rows at `dy` pixels below the lane's top.
 * @param {number} tracks
 * @param {number} dy
 * @returns {number}
 */
export function trackAt(tracks, dy) {
  return Math.min(tracks - 1, Math.max(0, Math.floor((dy - 2) / ((LANE_H - 4) / tracks))));
}

/**
 * The canvas's height for `lanes` lanes.
 * @param {number} lanes
 * @returns {number}
 */
export function heightFor(lanes) {
  return STRIP_H + lanes * LANE_H + AXIS_H;
}

/**
 * The theme's colours, as the widget's CSS resolves them (read once per theme: reading
 * them makes the page work out its styles).
 * @param {HTMLElement} el
 * @returns {Record<string, string>}
 */
export function colours(el) {
  const cs = getComputedStyle(el);
  /** @type {Record<string, string>} */
  const out = {};
  for (const name of ["fg", "fg2", "bg", "bg2", "border", "border2", "error", "ok", "warn", "info", "idle"]) out[name] = cs.getPropertyValue(`--tl-${name}`).trim() || "#888";
  out.font = cs.fontFamily || "sans-serif";
  return out;
}

/** The surface each canvas is painted through. */
const SURFACES = new WeakMap();

/**
 * What `canvas` is painted through: where the browser can, an OffscreenCanvas that shows
 * in it, whose text (fonts, widths, letters) never makes the page work out its styles
 * there and then, as the canvas element's own context does for each text call; else the
 * canvas itself.
 * @param {HTMLCanvasElement} canvas
 * @returns {HTMLCanvasElement | OffscreenCanvas}
 */
function surfaceOf(canvas) {
  let surface = SURFACES.get(canvas);
  if (!surface) {
    surface = typeof canvas.transferControlToOffscreen === "function" ? canvas.transferControlToOffscreen() : canvas;
    SURFACES.set(canvas, surface);
  }
  return surface;
}

/** The font each surface's context was given (a resize resets it). */
const FONTS = new WeakMap();

/**
 * Give `g` its font only when it does not have it (a font is parsed each time it is set).
 * @param {HTMLCanvasElement | OffscreenCanvas} canvas
 * @param {CanvasRenderingContext2D} g
 * @param {string} font
 */
function textStyle(canvas, g, font) {
  const key = `${font}\u0000${canvas.width}x${canvas.height}`;
  if (FONTS.get(canvas) === key) return;
  FONTS.set(canvas, key);
  g.font = font;
  g.textBaseline = "top";
  g.direction = "ltr";
}

/** Widths of the labels measured so far, per font ("font\0label" -> px). */
const WIDTHS = new Map();
let fontNow = ""; // the font of the paint going on (never read back from the canvas)

/**
 * The width of `text` in `g`'s font, measured once: measuring makes the page work out its
 * styles there and then, and a live run's timer repaints four times a second.
 * @param {CanvasRenderingContext2D} g
 * @param {string} text
 * @returns {number}
 */
function widthOf(g, text) {
  const key = `${fontNow}\u0000${text}`;
  let w = WIDTHS.get(key);
  if (w === undefined) {
    if (WIDTHS.size > 2000) WIDTHS.clear();
    w = g.measureText(text).width;
    WIDTHS.set(key, w);
  }
  return w;
}

/** The stripes of a palette (made once per theme). */
const PATTERNS = new WeakMap();

/**
 * A small tile of diagonal stripes over `base` (transparent when null).
 * @param {CanvasRenderingContext2D} g
 * @param {string | null} base
 * @param {string} stripe
 * @returns {CanvasPattern | string}
 */
function hatch(g, base, stripe) {
  const tile = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(6, 6) : document.createElement("canvas");
  tile.width = tile.height = 6;
  const t = tile.getContext("2d");
  if (!t) return stripe;
  if (base) {
    t.fillStyle = base;
    t.fillRect(0, 0, 6, 6);
  }
  t.strokeStyle = stripe;
  t.lineWidth = 2;
  t.beginPath();
  t.moveTo(-1, 7);
  t.lineTo(7, -1);
  t.stroke();
  return g.createPattern(tile, "repeat") || stripe;
}

/**
 * Paint `pic` on `canvas` (its CSS size `width` × heightFor(lanes), sharp on any screen).
 * @param {HTMLCanvasElement} canvas
 * @param {Record<string, string>} c the theme's colours (colours())
 * @param {Picture} pic
 */
export function paint(canvas, c, pic) {
  const width = pic.scale.width;
  const height = heightFor(pic.lanes.length);
  const dpr = globalThis.devicePixelRatio || 1;
  const surface = surfaceOf(canvas);
  if (surface.width !== Math.round(width * dpr) || surface.height !== Math.round(height * dpr)) {
    surface.width = Math.round(width * dpr);
    surface.height = Math.round(height * dpr);
    canvas.style.height = `${height}px`;
  }
  const g = /** @type {CanvasRenderingContext2D | null} */ (surface.getContext("2d"));
  if (!g) return;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  fontNow = `11px ${c.font}`;
  textStyle(surface, g, fontNow);
  const bottom = STRIP_H + pic.lanes.length * LANE_H;
  bands(g, c, pic, bottom);
  grid(g, c, pic.scale, bottom);
  let fills = PATTERNS.get(c);
  if (!fills) PATTERNS.set(c, (fills = { open: hatch(g, null, "rgba(255, 255, 255, 0.45)"), paused: hatch(g, null, c.warn) }));
  const { open, paused } = fills;
  pic.lanes.forEach((lane, i) => {
    const top = STRIP_H + i * LANE_H;
    g.fillStyle = c.border2;
    g.fillRect(0, top + LANE_H - 1, width, 1);
    if (lane.nested) extent(g, c, pic.scale, lane.nested, top);
    const tracks = tracksOf(lane.cells);
    for (const cell of lane.cells) bar(g, c, cell, top, tracks, cell.open ? open : null, paused);
  });
  if (pic.selected) {
    g.strokeStyle = c.info;
    g.lineWidth = 2;
    const w = Math.max(3, pic.selected.x1 - pic.selected.x0);
    g.strokeRect(pic.selected.x0, STRIP_H - 2, w, bottom - STRIP_H + 3);
  }
}

/**
 * @param {CanvasRenderingContext2D} g
 * @param {Record<string, string>} c
 * @param {Picture} pic
 * @param {number} bottom
 */
function bands(g, c, pic, bottom) {
  const width = pic.scale.width;
  /** @type {[number, number] | null} */
  let taken = null;
  if (pic.slowest) {
    const s = pic.slowest;
    g.globalAlpha = 0.22;
    g.fillStyle = c.warn;
    g.fillRect(s.x0, 0, Math.max(3, s.x1 - s.x0), bottom);
    g.globalAlpha = 1;
    const w = widthOf(g, s.label) + 12;
    const x = Math.min(Math.max(1, s.x0), width - w - 1);
    g.fillStyle = c.warn;
    g.fillRect(x, 4, 8, 8);
    g.fillStyle = c.fg;
    g.fillText(s.label, x + 11, 2);
    taken = [x - 4, x + w + 4];
  }
  pic.bands.forEach((b, i) => {
    if (i % 2) {
      g.fillStyle = c.bg2;
      g.globalAlpha = 0.6;
      g.fillRect(b.x0, STRIP_H, b.x1 - b.x0, bottom - STRIP_H);
      g.globalAlpha = 1;
    }
    const w = widthOf(g, b.label);
    const mid = (b.x0 + b.x1) / 2;
    if (b.x1 - b.x0 < w + 6 || (taken && mid + w / 2 > taken[0] && mid - w / 2 < taken[1])) return;
    g.fillStyle = c.fg2;
    g.fillText(b.label, mid - w / 2, 2);
  });
}

/**
 * @param {CanvasRenderingContext2D} g
 * @param {Record<string, string>} c
 * @param {Scale} scale
 * @param {number} bottom
 */
function grid(g, c, scale, bottom) {
  g.fillStyle = c.border2;
  const at = ticks(scale.span, scale.width);
  for (const v of at) g.fillRect(Math.min(scale.width - 1, Math.round(scale.x(v))), STRIP_H, 1, bottom - STRIP_H);
  g.fillStyle = c.fg2;
  for (const v of at) {
    const label = v === 0 ? "0" : duration(v);
    const w = widthOf(g, label);
    const x = Math.min(Math.max(0, scale.x(v) - w / 2), scale.width - w);
    g.fillText(label, x, bottom + 4);
  }
}

/**
 * A nested run's extent: a thin line from its start to its end.
 * @param {CanvasRenderingContext2D} g
 * @param {Record<string, string>} c
 * @param {Scale} scale
 * @param {Nested} n
 * @param {number} top
 */
function extent(g, c, scale, n, top) {
  const x0 = scale.x(n.offset);
  const x1 = Math.max(x0 + 2, scale.x(n.end));
  g.fillStyle = n.status === "failed" ? c.error : c.border;
  g.fillRect(x0, top + LANE_H / 2 - 1, x1 - x0, 2);
  g.fillRect(x0, top + 4, 1, LANE_H - 8);
  g.fillRect(x1 - 1, top + 4, 1, LANE_H - 8);
}

/**
 * @param {CanvasRenderingContext2D} g
 * @param {Record<string, string>} c
 * @param {Cell} cell
 * @param {number} top
 * @param {number} tracks rows of its lane
 * @param {CanvasPattern | string | null} open
 * @param {CanvasPattern | string} paused
 */
function bar(g, c, cell, top, tracks, open, paused) {
  const w = Math.max(1, cell.x1 - cell.x0);
  const failed = cell.failed > 0;
  const box = rowBox(tracks, cell.track, failed);
  const h = box.h;
  const y = top + box.y;
  const fill = failed ? c.error : cell.stopped ? c.idle : cell.kind === "model" ? c.info : cell.kind === "tool" ? c.ok : cell.kind === "pruning" ? c.warn : paused;
  g.fillStyle = fill;
  g.fillRect(cell.x0, y, w, h);
  if (cell.kind === "pause" && !failed) {
    g.fillStyle = c.warn;
    g.fillRect(cell.x0, y, w, 1);
    g.fillRect(cell.x0, y + h - 1, w, 1);
  }
  if (open) {
    g.fillStyle = open;
    g.fillRect(cell.x0, y, w, h);
  }
  if (failed) {
    // a marker above the lanes: a failure stands out even where its bar is a pixel wide
    const mid = cell.x0 + w / 2;
    g.fillStyle = c.error;
    g.beginPath();
    g.moveTo(mid - 5, STRIP_H - 9);
    g.lineTo(mid + 5, STRIP_H - 9);
    g.lineTo(mid, STRIP_H - 2);
    g.closePath();
    g.fill();
  }
}
