// The received and forwarded messages side by side, aligned message by message, with removed,
// added and changed messages and fields marked, and each finding pinned to its message/field.

import { h } from "./dom.js";
import { align } from "./align.js";
import { MISSING, messagePath, nodeFor, tree } from "./tree.js";

const FOLD_AT = 3; // runs of this many untouched messages collapse into one line

export function compare(record) {
  const received = messagesOf(record.received);
  const forwarded = record.forwarded == null ? null : messagesOf(record.forwarded);
  const { byMessage } = groupFindings(record.findings);
  const section = h("section", { className: "compare" }, h("h2", {}, "Messages"));
  if (!received) {
    section.append(h("p", { className: "muted" }, "The request's messages were not captured."));
    return section;
  }
  const fields = bodyFields(record);
  let ops = forwarded ? align(received, forwarded) : null;
  if (ops && ops.every((o) => o.kind === "same")) {
    // Nothing changed (a warned or upstream-rejected record): the messages are the story.
    section.append(h("p", { className: "col-head" },
      `Forwarded unchanged · ${received.length} messages`));
    ops = ops.map((o) => ({ ...o, kind: "sent" }));
  } else if (ops) {
    section.append(h("div", { className: "cols heads" },
      h("div", { className: "col-head" }, `Received · ${received.length} messages`),
      h("div", { className: "col-head" }, `Forwarded · ${forwarded.length} messages`)));
  } else {
    section.append(h("p", { className: "col-head" }, `Received · ${received.length} messages · `,
      record.outcome === "rejected" ? "not forwarded: the proxy rejected this request"
        : "the forwarded body was not recorded"));
    ops = received.map((_, i) => ({ kind: "unsent", left: i, right: null }));
  }
  if (fields) section.append(fields);
  section.append(...rows(ops, received, forwarded || [], byMessage));
  return section;
}

function messagesOf(body) {
  return body && Array.isArray(body.messages) ? body.messages : null;
}

export function groupFindings(findings) {
  const byMessage = new Map();
  const general = [];
  for (const finding of findings || []) {
    const where = messagePath(finding.path);
    if (!where) {
      general.push(finding);
      continue;
    }
    if (!byMessage.has(where.index)) byMessage.set(where.index, []);
    byMessage.get(where.index).push({ ...finding, rest: where.rest });
  }
  return { byMessage, general };
}

// The request's other fields (model, tools, …) when the proxy changed any of them.
function bodyFields(record) {
  const strip = (body) => {
    if (!body || typeof body !== "object") return null;
    const { messages: _, ...rest } = body;
    return rest;
  };
  const [mine, theirs] = [strip(record.received), strip(record.forwarded)];
  if (!mine || !theirs || JSON.stringify(mine) === JSON.stringify(theirs)) return null;
  return h("div", { className: "mrow kind-changed" },
    h("div", { className: "mrow-head" }, h("span", { className: "kind" }, "request fields")),
    h("div", { className: "cols" }, h("div", { className: "cell" }, tree(mine, theirs, "left").element),
      h("div", { className: "cell" }, tree(theirs, mine, "right").element)));
}

function rows(ops, received, forwarded, byMessage) {
  const out = [];
  let run = [];
  const flush = () => {
    if (run.length >= FOLD_AT) out.push(fold(run, received));
    else out.push(...run.map((o) => sameRow(o, received)));
    run = [];
  };
  for (const o of ops) {
    const pins = o.left === null ? [] : byMessage.get(o.left) || [];
    if (o.kind === "same" && !pins.length) {
      run.push(o);
      continue;
    }
    flush();
    out.push(changedRow(o, received, forwarded, pins));
  }
  flush();
  return out;
}

function label(message, index) {
  const role = message && typeof message === "object" ? String(message.role ?? "?") : "?";
  return `#${index} ${role}`;
}

function preview(message) {
  if (!message || typeof message !== "object") return "";
  if (typeof message.content === "string" && message.content) {
    return message.content.replace(/\s+/g, " ").slice(0, 120);
  }
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const names = calls.map((c) => c?.function?.name).filter((n) => typeof n === "string");
  return names.length ? `calls ${names.join(", ")}` : "";
}

function sameRow(o, received) {
  const message = received[o.left];
  const where = o.left === o.right ? `#${o.left}` : `#${o.left} → #${o.right}`;
  return h("details", { className: "mrow kind-same", "data-left": o.left, "data-right": o.right },
    h("summary", {}, h("span", { className: "kind" }, "unchanged"), " ",
      h("span", { className: "where" }, where, " ", String(message?.role ?? "?")), " ",
      h("span", { className: "preview" }, preview(message))),
    h("div", { className: "cell" }, tree(message, message, "left").element));
}

function fold(run, received) {
  const first = run[0].left;
  const last = run[run.length - 1].left;
  const button = h("button", { type: "button", className: "fold" },
    `${run.length} unchanged messages (#${first}–#${last}) · show`);
  button.addEventListener("click", () => button.replaceWith(...run.map((o) => sameRow(o, received))));
  return button;
}

const KIND_LABEL = {
  same: "flagged", changed: "changed", removed: "removed", added: "added", unsent: "received",
  sent: "sent",
};

function changedRow(o, received, forwarded, pins) {
  const mine = o.left === null ? MISSING : received[o.left];
  const theirs = o.right === null ? MISSING : forwarded[o.right];
  const row = h("div", { className: `mrow kind-${o.kind}`, "data-left": o.left ?? undefined,
    "data-right": o.right ?? undefined, id: o.left === null ? undefined : `msg-${o.left}` },
  h("div", { className: "mrow-head" }, h("span", { className: "kind" }, KIND_LABEL[o.kind]),
    pins.map(pinTag)));
  const left = mine === MISSING
    ? h("div", { className: "cell placeholder" }, "— added by the proxy —")
    : card(mine, theirs, "left", label(mine, o.left), pins);
  const right = o.kind === "unsent" || o.kind === "sent" ? null : theirs === MISSING
    ? h("div", { className: "cell placeholder" }, "— removed by the proxy —")
    : card(theirs, mine, "right", label(theirs, o.right), []);
  row.append(h("div", { className: `cols${right ? "" : " single"}` }, left, right));
  return row;
}

function pinTag(finding) {
  return h("span", { className: "pin-note" }, h("span", { className: "rule" }, finding.rule),
    " ", h("span", { className: "action" }, finding.action), " ",
    h("span", { className: "detail" }, finding.detail));
}

function card(message, other, side, title, pins) {
  const { element, nodes } = tree(message, other, side);
  for (const finding of pins) {
    const node = nodeFor(nodes, finding.rest);
    node.classList.add("pinned");
    const target = node.querySelector(":scope > .line") || node;
    target.prepend(h("span", { className: "pin", title: finding.detail }, finding.rule));
  }
  return h("div", { className: `cell side-${side}` }, h("div", { className: "card-head" }, title),
    element);
}
