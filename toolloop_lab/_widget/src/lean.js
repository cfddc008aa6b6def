// @ts-check
// What keeps a long run's fold lean: the page's garbage collector walks every object the
// fold keeps, and its full collections were a long run's longest tasks. One shared, frozen
// empty list for every round and call that has nothing in a list yet, a check that a later
// event repeats data the fold already holds, so it keeps one copy, and one list of tool
// names for every call that names the same tools.

/**
 * The empty list every round and call starts with, shared until one gets an item
 * ({@link add}): a 10,000-round run keeps no empty arrays, so the page's garbage collector
 * walks that many fewer objects (its pause is what a long run's longest task is). Frozen,
 * so a push on it throws instead of reaching every round.
 */
export const NONE = /** @type {any[]} */ (/** @type {unknown} */ (Object.freeze([])));

/**
 * `list` with `item` at its end: the list itself, or a new one in place of {@link NONE}.
 * @template T
 * @param {T[]} list
 * @param {T} item
 * @returns {T[]}
 */
export function add(list, item) {
  if (list === NONE) return [item];
  list.push(item);
  return list;
}

/**
 * Whether two JSON values, as events carry them, hold the same data (keys in the same
 * order): a later event that repeats a call's arguments then leaves the fold's one copy in
 * place. Past 1,000 entries it answers false, and the fold keeps the new copy as before.
 * @param {any} a
 * @param {any} b
 * @returns {boolean}
 */
export function sameData(a, b) {
  return sameWithin(a, b, 1000) >= 0;
}

/**
 * @param {any} a
 * @param {any} b
 * @param {number} left entries still to compare
 * @returns {number} entries left after these (-1: not the same, or too many)
 */
function sameWithin(a, b, left) {
  if (a === b) return left;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return -1;
  if (Array.isArray(a) !== Array.isArray(b)) return -1;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  left -= ka.length;
  if (ka.length !== kb.length || left < 0) return -1;
  for (let i = 0; i < ka.length && left >= 0; i++) {
    left = ka[i] === kb[i] ? sameWithin(a[ka[i]], b[ka[i]], left) : -1;
  }
  return left;
}

/** @type {Map<string, string[]>} */
const NAMES = new Map();
const NAMES_KEPT = 256;

/**
 * A call's tool names: one array for every call that names the same tools (a long run's
 * calls all do), instead of one per call; only the first {@link NAMES_KEPT} different lists
 * are shared, so a run cannot grow the table without end.
 * @param {string[] | undefined} list
 * @returns {string[]}
 */
export function names(list) {
  if (!list || !list.length) return NONE;
  const key = list.join("\u0000");
  const known = NAMES.get(key);
  if (known) return known;
  if (NAMES.size < NAMES_KEPT) NAMES.set(key, list);
  return list;
}
