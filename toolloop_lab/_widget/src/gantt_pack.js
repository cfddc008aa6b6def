// @ts-check
// The whole-run timeline in pixels (no DOM): a time scale, bars narrower than a pixel
// merged into one per pixel column (a 10,000-round run draws at most a few bars per
// column, whatever its length), the axis's ticks, and which bar a point is on.

/** @typedef {import("./gantt_data.js").Item} Item */
/** @typedef {import("./gantt_data.js").Kind} Kind */

/**
 * @typedef {object} Cell one drawn bar: one item, or the items of one pixel column
 * @property {number} x0
 * @property {number} x1
 * @property {number} first the place of its first item in the lane
 * @property {number} count how many items it holds
 * @property {number} failed how many of them failed
 * @property {boolean} open one of them still grows
 * @property {boolean} stopped all of them were cut short by a stop
 * @property {Kind} kind its first item's kind
 * @property {number} track its row in the lane: bars side by side (tools run together) get a row each
 */

/**
 * @typedef {object} Scale
 * @property {number} width pixels
 * @property {number} span seconds the width shows (from 0)
 * @property {(t: number) => number} x
 * @property {(x: number) => number} t
 */

/**
 * Seconds 0..span onto pixels 0..width.
 * @param {number} span
 * @param {number} width
 * @returns {Scale}
 */
export function scaleOf(span, width) {
  const s = Math.max(span, 1e-6);
  const k = width / s;
  return { width, span: s, x: (t) => t * k, t: (x) => x / k };
}

/** Rows a lane splits into at most for bars side by side (the rest share the last). */
export const MAX_TRACKS = 3;

/**
 * The cells that draw `items`: one per item a pixel wide or more, and one per pixel column
 * for the thinner ones that follow each other there (a failed one keeps the cell failed).
 * A bar that starts before the one above it ends goes on the next row (tools of a round
 * that ran side by side read as such).
 * @param {Item[]} items
 * @param {Scale} scale
 * @param {number} now where an open item ends
 * @returns {Cell[]}
 */
export function pack(items, scale, now) {
  /** @type {Cell[]} */
  const cells = [];
  /** @type {Cell | null} */
  let thin = null;
  /** @type {number[]} where each row's last bar ends */
  const ends = [];
  const k = scale.width / scale.span;
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    const a = it.t0 * k;
    const b = (it.t1 === null ? Math.max(now, it.t0) : it.t1) * k;
    let track = 0;
    while (track < ends.length && ends[track] > a + 0.5) track++;
    if (track === MAX_TRACKS) track = MAX_TRACKS - 1;
    ends[track] = track < ends.length ? Math.max(ends[track], b) : b;
    if (b - a >= 1) {
      cells.push({ x0: a, x1: b, first: i, count: 1, failed: it.failed ? 1 : 0, open: it.t1 === null, stopped: it.stopped, kind: it.kind, track });
      thin = null;
      continue;
    }
    const col = Math.floor(a);
    if (thin && thin.x0 === col && thin.track === track) {
      thin.count++;
      if (it.failed) thin.failed++;
      if (it.t1 === null) thin.open = true;
      thin.stopped = thin.stopped && it.stopped;
      continue;
    }
    thin = { x0: col, x1: col + 1, first: i, count: 1, failed: it.failed ? 1 : 0, open: it.t1 === null, stopped: it.stopped, kind: it.kind, track };
    cells.push(thin);
  }
  return cells;
}

/**
 * The rows `cells` take (1 when no bars ran side by side).
 * @param {Cell[]} cells
 * @returns {number}
 */
export function tracksOf(cells) {
  let most = 0;
  for (const c of cells) if (c.track > most) most = c.track;
  return most + 1;
}

/**
 * The cell under `x` (on row `track` of `tracks` when given: a fraction 0..1 of the lane's
 * height), the last drawn winning; else the nearest within `slack` pixels; -1 when none.
 * @param {Cell[]} cells
 * @param {number} x
 * @param {number} [slack]
 * @param {number} [track]
 * @returns {number}
 */
export function hitCell(cells, x, slack = 3, track) {
  let near = -1;
  let best = slack + 1;
  for (let i = cells.length - 1; i >= 0; i--) {
    const c = cells[i];
    if (track !== undefined && c.track !== track) continue;
    if (x >= c.x0 && x <= c.x1) return i;
    const d = x < c.x0 ? c.x0 - x : x - c.x1;
    if (d < best) {
      best = d;
      near = i;
    }
  }
  return near;
}

/**
 * Round tick values for an axis of `span` seconds over `width` pixels, at least `gap`
 * pixels apart (1, 2 or 5 times a power of ten seconds; minutes past two minutes).
 * @param {number} span
 * @param {number} width
 * @param {number} [gap]
 * @returns {number[]}
 */
export function ticks(span, width, gap = 80) {
  if (!(span > 0) || !(width > 0)) return [0];
  const most = Math.max(1, Math.floor(width / gap));
  const raw = span / most;
  const steps = raw >= 120 ? [60, 120, 300, 600, 900, 1800, 3600, 7200] : [1, 2, 5].flatMap((m) => [-3, -2, -1, 0, 1, 2].map((e) => m * 10 ** e)).sort((a, b) => a - b);
  const step = steps.find((v) => v >= raw) || Math.ceil(raw / 3600) * 3600;
  const out = [];
  for (let i = 0; i * step <= span + step * 1e-9; i++) out.push(Number((i * step).toPrecision(12)));
  return out;
}
