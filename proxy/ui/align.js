// Aligns the received and forwarded messages: which forwarded message each received one became.
// Patience-style: identical messages that occur once on each side anchor the alignment; the
// gaps between anchors are paired by what survives a repair (a tool call id, the text), not by
// role alone, so that a salvaged tool result lines up with the user message it became and a
// synthesized result shows as added. A 10,000-message history aligns in milliseconds.

import { callIds, callNames, kindOf, textOf } from "./items.js";

// Canonical JSON (sorted keys) so that key order never reads as a change.
export function canon(value) {
  if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canon(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const MAX_DP_CELLS = 250_000;

// -> [{kind: "same" | "changed" | "removed" | "added", left: i | null, right: j | null}]
export function align(left, right) {
  const lk = left.map(canon);
  const rk = right.map(canon);
  const out = [];
  alignRange({ left, right, lk, rk, out }, 0, left.length, 0, right.length);
  return out;
}

function alignRange(ctx, a0, a1, b0, b1) {
  const { lk, rk, out } = ctx;
  while (a0 < a1 && b0 < b1 && lk[a0] === rk[b0]) out.push(op("same", a0++, b0++));
  const tail = [];
  while (a1 > a0 && b1 > b0 && lk[a1 - 1] === rk[b1 - 1]) tail.push(op("same", --a1, --b1));
  const anchors = uniqueAnchors(lk, rk, a0, a1, b0, b1);
  if (anchors.length) {
    let [pa, pb] = [a0, b0];
    for (const [ia, ib] of anchors) {
      alignRange(ctx, pa, ia, pb, ib);
      out.push(op("same", ia, ib));
      [pa, pb] = [ia + 1, ib + 1];
    }
    alignRange(ctx, pa, a1, pb, b1);
  } else {
    pairGap(ctx, a0, a1, b0, b1);
  }
  out.push(...tail.reverse());
}

function op(kind, left, right) {
  return { kind, left, right };
}

// Messages identical on both sides and unique on each, in an order-preserving chain (LIS).
function uniqueAnchors(lk, rk, a0, a1, b0, b1) {
  const count = (keys, from, to) => {
    const seen = new Map();
    for (let i = from; i < to; i++) seen.set(keys[i], seen.has(keys[i]) ? -1 : i);
    return seen;
  };
  const onLeft = count(lk, a0, a1);
  const onRight = count(rk, b0, b1);
  const pairs = [];
  for (const [key, ia] of onLeft) {
    const ib = onRight.get(key);
    if (ia >= 0 && ib !== undefined && ib >= 0) pairs.push([ia, ib]);
  }
  pairs.sort((x, y) => x[0] - y[0]);
  return longestIncreasing(pairs);
}

function longestIncreasing(pairs) {
  const tails = [];
  const prev = new Array(pairs.length);
  for (let i = 0; i < pairs.length; i++) {
    let [lo, hi] = [0, tails.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]][1] < pairs[i][1]) lo = mid + 1;
      else hi = mid;
    }
    prev[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const chain = [];
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) {
    chain.push(pairs[i]);
  }
  return chain.reverse();
}

// No anchors left. A small gap: pair messages that are recognisably the same message, edited.
// A large one (a long history of repeated messages): a Myers diff finds the identical ones
// first, and the small gaps between them are paired the same way.
function pairGap(ctx, a0, a1, b0, b1, split = true) {
  if ((a1 - a0) * (b1 - b0) <= MAX_DP_CELLS) {
    pairRelated(ctx, a0, a1, b0, b1);
    return;
  }
  const same = split ? myers(ctx.lk.slice(a0, a1), ctx.rk.slice(b0, b1)) : null;
  if (!same) {
    for (let i = a0; i < a1; i++) ctx.out.push(op("removed", i, null));
    for (let j = b0; j < b1; j++) ctx.out.push(op("added", null, j));
    return;
  }
  let [pa, pb] = [a0, b0];
  for (const [x, y] of same) {
    pairGap(ctx, pa, a0 + x, pb, b0 + y, false);
    ctx.out.push(op("same", a0 + x, b0 + y));
    [pa, pb] = [a0 + x + 1, b0 + y + 1];
  }
  pairGap(ctx, pa, a1, pb, b1, false);
}

function pairRelated(ctx, a0, a1, b0, b1) {
  const n = a1 - a0;
  const m = b1 - b0;
  const score = (i, j) => (related(ctx.left[a0 + i], ctx.right[b0 + j]) ? 1 : 0);
  // best[i][j]: most pairs among left[i..] and right[j..], an LCS over "related".
  const best = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      const pair = score(i, j) ? best[i + 1][j + 1] + 1 : -1;
      best[i][j] = Math.max(pair, best[i + 1][j], best[i][j + 1]);
    }
  }
  let [i, j] = [0, 0];
  while (i < n || j < m) {
    if (i < n && j < m && score(i, j) && best[i][j] === best[i + 1][j + 1] + 1) {
      ctx.out.push(op("changed", a0 + i++, b0 + j++));
    } else if (i < n && (j === m || best[i + 1][j] >= best[i][j + 1])) {
      ctx.out.push(op("removed", a0 + i++, null));
    } else {
      ctx.out.push(op("added", null, b0 + j++));
    }
  }
}

const MAX_EDITS = 1000;

// Myers' O((N+M)D) diff of two key lists: the [i, j] pairs of equal keys it keeps, in order,
// or null beyond MAX_EDITS edits (then the two sides have little in common anyway).
function myers(a, b) {
  const [n, m] = [a.length, b.length];
  const max = Math.min(n + m, MAX_EDITS);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
      let x = down ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) [x, y] = [x + 1, y + 1];
      v[offset + k] = x;
      if (x >= n && y >= m) return kept(trace, n, m, offset);
    }
  }
  return null;
}

function kept(trace, n, m, offset) {
  const pairs = [];
  let [x, y] = [n, m];
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d];
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
    const px = down ? v[offset + k + 1] : v[offset + k - 1];
    const py = px - (down ? k + 1 : k - 1);
    while (x > px && y > py) pairs.push([--x, --y]);
    [x, y] = [px, py];
  }
  return pairs.reverse();
}

// The same message after a repair: its text is kept (a salvaged tool result keeps its text
// inside a user message), or it is of the same kind (role, or Responses item type) and shares a
// call id, or the names of its calls (remapped ids), or both are empty.
export function related(a, b) {
  const [ta, tb] = [textOf(a), textOf(b)];
  if (ta && tb && (ta === tb || (ta.length >= 8 && tb.includes(ta)))) return true;
  // A call and its output share an id but are never the same item.
  if (kindOf(a) !== kindOf(b)) return false;
  const ids = callIds(a);
  for (const id of callIds(b)) if (ids.has(id)) return true;
  const names = callNames(a);
  if (names && names === callNames(b)) return true;
  return !ta && !tb && !ids.size && !callIds(b).size;
}
