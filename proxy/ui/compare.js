// The received and forwarded history side by side (chat messages or Responses input items),
// aligned item by item, with removed, added, salvaged and changed items and fields marked, each
// finding pinned to its item/field, and each item the proxy added labelled with its rule.

import { actionKind, findingTag, h } from "./dom.js";
import { align } from "./align.js";
import { historyKey, historyOf, itemLabel, itemPath, kindOf, preview, useViews } from "./items.js";
import { explain } from "./provenance.js";
import { MISSING, nodeFor, tree } from "./tree.js";

const FOLD_AT = 3; // runs of this many untouched items collapse into one line

// The record's history section.
export function compare(record) {
  return comparison({ title: null, before: record.received, after: record.forwarded,
    findings: record.findings, rejected: record.outcome === "rejected",
    key: record.history_key, noun: record.noun,
    views: [record.views?.received, record.views?.forwarded] });
}

// {title, heading, sides, before, after, findings, rejected, prefix, note, key, noun, views,
// unchanged}: `key` is the record's history_key and `noun` what its items are called (from the
// wire API's row), `views` the row's views of before's and after's items; `unchanged` says what happened
// to a history sent as received (default "Forwarded unchanged"); `sides` names the
// two columns; `prefix` keeps row ids unique when a page shows several comparisons; `note` (a
// finding-like tag) labels changed rows no finding explains (the rule a retry applied).
export function comparison(opts) {
  const { before, after } = opts;
  const received = historyOf(before, opts.key);
  const forwarded = after == null ? null : historyOf(after, opts.key);
  useViews(received?.items, opts.views?.[0]);
  useViews(forwarded?.items, opts.views?.[1]);
  const noun = opts.noun || ((received?.key ?? historyKey(before)) === "input" ? "items"
    : "messages");
  const title = { items: "Input items", contents: "Contents" }[noun] || "Messages";
  const section = h("section", { className: "compare" },
    h(opts.heading || "h2", {}, opts.title ?? title));
  if (!received) {
    section.append(h("p", { className: "muted" }, typeof before?.input === "string"
      ? "The input is a plain string: there is no item history to check."
      : `The request's ${noun} were not captured.`));
    return section;
  }
  const ctx = { received: received.items, forwarded: forwarded ? forwarded.items : [],
    byItem: groupFindings(opts.findings, opts.key).byItem, prefix: opts.prefix || "", note: opts.note };
  const count = (items) => `${items.length} ${noun}`;
  const sides = opts.sides || ["Received", "Forwarded"];
  let ops = forwarded ? align(ctx.received, ctx.forwarded) : null;
  if (ops && ops.every((o) => o.kind === "same")) {
    // Nothing changed (a warned or upstream-rejected record): the items are the story.
    const unchanged = opts.unchanged || "Forwarded unchanged";
    section.append(h("p", { className: "col-head" }, `${unchanged} · ${count(ctx.received)}`));
    ops = ops.map((o) => ({ ...o, kind: "sent" }));
  } else if (ops) {
    section.append(h("div", { className: "cols heads" },
      h("div", { className: "col-head" }, `${sides[0]} · ${count(ctx.received)}`),
      h("div", { className: "col-head" }, `${sides[1]} · ${count(ctx.forwarded)}`)));
    ops = explain(ops, ctx.received, ctx.forwarded, ctx.byItem);
  } else {
    section.append(h("p", { className: "col-head" }, `Received · ${count(ctx.received)} · `,
      opts.rejected ? "not forwarded: the proxy rejected this request"
        : "the forwarded body was not recorded"));
    ops = ctx.received.map((_, i) => ({ kind: "unsent", left: i, right: null }));
  }
  const fields = bodyFields(before, after, received.key);
  if (fields) section.append(fields);
  section.append(...rows(ops, ctx));
  return section;
}

export function groupFindings(findings, key) {
  const byItem = new Map();
  const general = [];
  for (const finding of findings || []) {
    const where = itemPath(finding.path, key);
    if (!where) {
      general.push(finding);
      continue;
    }
    if (!byItem.has(where.index)) byItem.set(where.index, []);
    byItem.get(where.index).push({ ...finding, rest: where.rest });
  }
  return { byItem, general };
}

// The request's other fields (model, tools, …) when the proxy changed any of them.
function bodyFields(before, after, key) {
  const strip = (body) => {  // the body without its history (a nested one: its holder's)
    if (!body || typeof body !== "object") return null;
    const [head, ...tail] = String(key).split(".");
    const { [head]: inner, ...rest } = body;
    if (!tail.length || !inner || typeof inner !== "object") return rest;
    const { [tail.join(".")]: _, ...within } = inner;
    return { ...rest, [head]: within };
  };
  const [mine, theirs] = [strip(before), strip(after)];
  if (!mine || !theirs || JSON.stringify(mine) === JSON.stringify(theirs)) return null;
  return h("div", { className: "mrow kind-changed" },
    h("div", { className: "mrow-head" }, h("span", { className: "kind" }, "request fields")),
    h("div", { className: "cols" }, h("div", { className: "cell" }, tree(mine, theirs, "left").element),
      h("div", { className: "cell" }, tree(theirs, mine, "right").element)));
}

function rows(ops, ctx) {
  const out = [];
  let run = [];
  const flush = () => {
    if (run.length >= FOLD_AT) out.push(fold(run, ctx.received));
    else out.push(...run.map((o) => sameRow(o, ctx.received)));
    run = [];
  };
  for (const o of ops) {
    const pins = o.left === null ? [] : ctx.byItem.get(o.left) || [];
    if (o.kind === "same" && !pins.length) {
      run.push(o);
      continue;
    }
    flush();
    out.push(changedRow(o, ctx, pins));
  }
  flush();
  return out;
}

function sameRow(o, received) {
  const item = received[o.left];
  const where = o.left === o.right ? `#${o.left}` : `#${o.left} → #${o.right}`;
  return h("details", { className: "mrow kind-same", "data-left": o.left, "data-right": o.right },
    h("summary", {}, h("span", { className: "kind" }, "unchanged"), " ",
      h("span", { className: "where" }, where, " ", kindOf(item)), " ",
      h("span", { className: "preview" }, preview(item))),
    h("div", { className: "cell" }, tree(item, item, "left").element));
}

function fold(run, received) {
  const first = run[0].left;
  const last = run[run.length - 1].left;
  const button = h("button", { type: "button", className: "fold" },
    `${run.length} unchanged (#${first}–#${last}) · show`);
  button.addEventListener("click", () => button.replaceWith(...run.map((o) => sameRow(o, received))));
  return button;
}

const KIND_LABEL = {
  same: "flagged", changed: "changed", removed: "removed", added: "added", unsent: "received",
  sent: "sent", salvaged: "salvaged",
};

function changedRow(o, ctx, pins) {
  const mine = o.left === null ? MISSING : ctx.received[o.left];
  const theirs = o.right === null ? MISSING : ctx.forwarded[o.right];
  const id = o.left === null ? `${ctx.prefix}fwd-${o.right}` : `${ctx.prefix}msg-${o.left}`;
  const row = h("div", { className: `mrow kind-${o.kind}`, "data-left": o.left ?? undefined,
    "data-right": o.right ?? undefined, id },
  h("div", { className: "mrow-head" }, h("span", { className: "kind" }, KIND_LABEL[o.kind]),
    headTags(o, pins, ctx)));
  const left = mine === MISSING
    ? h("div", { className: "cell placeholder" }, "— added by the proxy —")
    : card(mine, theirs, "left", itemLabel(mine, o.left), pins);
  const right = o.kind === "unsent" || o.kind === "sent" ? null : theirs === MISSING
    ? gone(o, row, ctx)
    : card(theirs, mine, "right", itemLabel(theirs, o.right), []);
  row.append(h("div", { className: `cols${right ? "" : " single"}` }, left, right));
  return row;
}

// The findings that explain a row: pinned to its received item, or (for an added item) those
// that made it; else the comparison's note for a changed row.
function headTags(o, pins, ctx) {
  const tags = (pins.length ? pins : o.because || []).map(findingTag);
  if (o.from?.length) {
    tags.push(h("span", { className: "muted" }, `holds the text of ${o.from.map((i) => `#${i}`)
      .join(", ")}`));
  }
  if (!tags.length && ctx.note && o.kind !== "sent" && o.kind !== "unsent") {
    tags.push(findingTag(ctx.note));
  }
  return tags;
}

// The right side of an item with no forwarded counterpart: removed, or salvaged elsewhere.
function gone(o, row, ctx) {
  if (o.kind !== "salvaged") {
    return h("div", { className: "cell placeholder" }, "— removed by the proxy —");
  }
  const target = ctx.forwarded[o.into];
  const link = h("button", { type: "button", className: "link mono", onclick: () => {
    const section = row.closest(".compare");
    flash(section?.querySelector(`.mrow[data-right="${o.into}"]`));
  } }, `#${o.into} ${kindOf(target)}`);
  return h("div", { className: "cell placeholder salvaged-into" },
    "— salvaged: its text was moved into ", link, " —");
}

export function flash(row) {
  if (!row) return;
  row.scrollIntoView({ behavior: "smooth", block: "center" });
  row.classList.remove("flash");
  void row.offsetWidth; // restart the animation
  row.classList.add("flash");
}

function card(item, other, side, title, pins) {
  const { element, nodes } = tree(item, other, side);
  for (const finding of pins) {
    const node = nodeFor(nodes, finding.rest);
    node.classList.add("pinned");
    const target = node.querySelector(":scope > .line") || node;
    target.prepend(h("span", { className: `pin pin-${actionKind(finding.action)}`,
      title: finding.detail }, finding.rule));
  }
  return h("div", { className: `cell side-${side}` }, h("div", { className: "card-head" }, title),
    element);
}

