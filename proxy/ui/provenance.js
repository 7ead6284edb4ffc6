// Where the items the proxy moved or added came from. The alignment only says "removed" and
// "added"; this says why: a tool result whose text now sits in a user message was salvaged
// (moved, not lost), and an item the proxy added carries the rule that made it (a synthesized
// result, the user message holding salvaged results, a restored call).

import { callIds, kindOf, textOf } from "./items.js";

const isUser = (item) => kindOf(item) === "user";

// ops: from align(); byItem: Map(received index -> findings with `rest`). Returns new ops:
// kind "salvaged" (with `into`: the forwarded index holding its text) for moved results, and
// on added ops `because` (the findings that explain them) and `from` (salvaged indices).
export function explain(ops, received, forwarded, byItem) {
  const users = forwarded.map((item, j) => [item, j]).filter(([item]) => isUser(item));
  const from = new Map(); // forwarded index -> received indices whose text it holds
  const out = ops.map((o) => {
    const into = salvagedInto(o, received, forwarded, users);
    if (into === null) return o;
    if (!from.has(into)) from.set(into, []);
    from.get(into).push(o.left);
    return { ...o, kind: "salvaged", into };
  });
  return out.map((o) => (o.kind === "added" ? added(o, from, received, forwarded, byItem) : o));
}

// The forwarded user message a received item's text moved into, or null.
function salvagedInto(o, received, forwarded, users) {
  if (o.left === null || (o.kind !== "removed" && o.kind !== "changed")) return null;
  const item = received[o.left];
  const text = textOf(item);
  if (!text || isUser(item)) return null;
  if (o.kind === "changed") return isUser(forwarded[o.right]) && holds(forwarded[o.right], text)
    ? o.right : null;
  const found = users.find(([user]) => holds(user, text));
  return found ? found[1] : null;
}

function holds(item, text) {
  return textOf(item).includes(text);
}

function added(o, from, received, forwarded, byItem) {
  const sources = from.get(o.right) || [];
  if (sources.length) {
    return { ...o, from: sources, because: sources.flatMap((i) => byItem.get(i) || []) };
  }
  return { ...o, because: byCallId(forwarded[o.right], received, byItem) };
}

// Findings on the received calls or results sharing the added item's call ids: the missing
// result a synthesized one answers, the orphan results a restored call answers.
function byCallId(item, received, byItem) {
  const ids = callIds(item);
  if (!ids.size) return [];
  const out = [];
  for (const [index, findings] of byItem) {
    const other = received[index];
    if (![...callIds(other)].some((id) => ids.has(id))) continue;
    out.push(...findings.filter((f) => aboutCall(f.rest, other, ids)));
  }
  return out;
}

// A finding on the whole item (or its call_id), or on one of its tool_calls whose id is among `ids` (not on a
// field of the message, like its content).
function aboutCall(rest, item, ids) {
  if (!rest || rest === "call_id") return true;
  const m = /^tool_calls\[(\d+)\]$/.exec(rest);
  const call = m && Array.isArray(item?.tool_calls) ? item.tool_calls[Number(m[1])] : null;
  return Boolean(call && ids.has(call.id));
}
