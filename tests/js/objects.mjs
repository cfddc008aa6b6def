// What a structure keeps, for the Node tests: the objects
// reachable from a root (arrays, maps, sets and plain objects; each counted once).

/**
 * Objects reachable from `root`, `root` included when it is one.
 * @param {any} root
 * @returns {number}
 */
export function objectsIn(root) {
  const seen = new Set();
  const stack = [root];
  while (stack.length) {
    const o = stack.pop();
    if (o === null || typeof o !== "object" || seen.has(o)) continue;
    seen.add(o);
    if (o instanceof Map) for (const [k, v] of o) stack.push(k, v);
    else if (o instanceof Set) for (const v of o) stack.push(v);
    else for (const k of Object.keys(o)) stack.push(o[k]);
  }
  return seen.size;
}
