// Renders a JSON value as an indented tree, marking what differs from its counterpart on the
// other side (removed / added / changed fields), and remembers each node by its path so that
// findings can be pinned to the exact field they name.

import { h } from "./dom.js";
import { canon } from "./align.js";

export const MISSING = Symbol("missing");
const LONG_TEXT = 2000;

// side: "left" (received) or "right" (forwarded); other: the counterpart value or MISSING when
// the whole value has no counterpart (then nothing inside is marked: the card is).
export function tree(value, other, side, basePath = "") {
  const nodes = new Map();
  const root = h("div", { className: "tree" });
  root.append(renderValue(value, other, side, basePath, nodes, other === MISSING));
  nodes.set(basePath, root);
  return { element: root, nodes };
}

function renderValue(value, other, side, path, nodes, whole) {
  if (Array.isArray(value)) return renderList(value, other, side, path, nodes, whole);
  if (value && typeof value === "object") return renderObject(value, other, side, path, nodes, whole);
  return scalar(value);
}

function renderObject(value, other, side, path, nodes, whole) {
  const keys = Object.keys(value);
  if (!keys.length) return h("span", { className: "punct" }, "{}");
  const box = h("div", { className: "obj" });
  const counterpart = isObject(other) ? other : null;
  for (const key of keys) {
    const childPath = path ? `${path}.${key}` : key;
    const theirs = counterpart && Object.hasOwn(counterpart, key) ? counterpart[key] : MISSING;
    box.append(field(h("span", { className: "key" }, key), value[key], theirs, side, childPath,
      nodes, whole || (counterpart === null && other !== MISSING)));
  }
  return box;
}

function renderList(value, other, side, path, nodes, whole) {
  if (!value.length) return h("span", { className: "punct" }, "[]");
  const box = h("div", { className: "list" });
  const counterpart = Array.isArray(other) ? other : null;
  value.forEach((item, i) => {
    const theirs = counterpart && i < counterpart.length ? counterpart[i] : MISSING;
    box.append(field(h("span", { className: "idx" }, String(i)), item, theirs, side,
      `${path}[${i}]`, nodes, whole || (counterpart === null && other !== MISSING)));
  });
  return box;
}

function field(label, mine, theirs, side, path, nodes, whole) {
  const mark = whole ? null : markOf(mine, theirs, side);
  const nested = mine && typeof mine === "object" && !isEmpty(mine);
  const row = h("div", { className: `field${mark ? ` mark-${mark}` : ""}`, "data-path": path },
    h("div", { className: "line" }, label, h("span", { className: "punct" }, ":"),
      nested ? null : renderValue(mine, theirs, side, path, nodes, whole)));
  if (nested) {
    const sameShape = mark === null || mark === "changed-inside";
    row.append(renderValue(mine, sameShape ? theirs : MISSING, side, path, nodes,
      whole || !sameShape));
  }
  nodes.set(path, row);
  return row;
}

// "changed-inside": both sides are containers of the same kind, marks go on their children.
function markOf(mine, theirs, side) {
  if (theirs === MISSING) return side === "left" ? "removed" : "added";
  if (canon(mine) === canon(theirs)) return null;
  const bothObjects = isObject(mine) && isObject(theirs);
  const bothLists = Array.isArray(mine) && Array.isArray(theirs);
  return bothObjects || bothLists ? "changed-inside" : "changed";
}

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function isEmpty(v) {
  return Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0;
}

function scalar(value) {
  if (typeof value !== "string") {
    return h("span", { className: `scalar ${value === null ? "null" : typeof value}` },
      JSON.stringify(value) ?? String(value));
  }
  if (value.length <= LONG_TEXT) return h("span", { className: "str" }, value);
  const span = h("span", { className: "str" }, value.slice(0, LONG_TEXT));
  const more = h("button", { type: "button", className: "link" },
    `… show all ${value.length.toLocaleString()} characters`);
  more.addEventListener("click", () => { span.textContent = value; more.remove(); });
  return h("span", {}, span, more);
}

// The node a path names, or its closest rendered ancestor (a finding may name a field that is
// missing, like an absent reasoning_content).
export function nodeFor(nodes, path) {
  let p = path;
  while (p && !nodes.has(p)) {
    const parent = p.replace(/(\.[^.[\]]*|\[\d+\])$|^[^.[\]]*$/, "");
    p = parent === p ? "" : parent;
  }
  return nodes.get(p) || nodes.get("");
}
