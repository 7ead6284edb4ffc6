// One record: what came in, what went out, why, and how to reproduce it locally.

import { getJSON } from "./api.js";
import {
  actionTag, badge, copyButton, duration, endingMark, h, prettyError, timeLabel,
} from "./dom.js";
import { attemptsSection } from "./attempts.js";
import { compare, flash, groupFindings } from "./compare.js";
import { itemPath } from "./items.js";

// The record page's nodes (the caller places them if the user has not moved on meanwhile).
export async function recordPage(id, backHref) {
  const record = await getJSON(`/repairs/${encodeURIComponent(id)}`);
  // A retried request shows each attempt (with its own upstream error) instead of one diff.
  const attempts = attemptsSection(record);
  return [
    h("nav", { className: "crumbs" }, h("a", { href: backHref }, "← All records")),
    header(record),
    attempts ? null : upstreamError(record),
    findingsList(record),
    reproduce(record),
    attempts || compare(record),
  ].filter(Boolean);
}

function header(record) {
  const meta = [
    ["created", timeLabel(record.created_at)],
    ["upstream", record.upstream],
    ["model", record.model ?? "—"],
    ["path", record.path],
    ["stream", record.stream ? "yes" : "no"],
    ["upstream status", record.upstream_status ?? "—"],
    // What the client got, when it is not the upstream's answer (the proxy's own 502, 400…).
    ["client status", record.status === record.upstream_status ? null : record.status],
    ["proxy error", record.proxy_error],
    ["ending", endingMark(record.ending)],
    ["retried", retriedWith(record)],
    ["error kind", record.upstream_error_kind],
    ["duration", duration(record.duration_ms)],
    ["request id", record.request_id],
    ["client", record.client],
    ["conversation", conversationLink(record)],
  ].filter(([, value]) => value !== undefined && value !== null && value !== "");
  return h("header", { className: "record-head" },
    h("h1", {}, badge(record.outcome), " ", h("span", { className: "mono id" }, record.id)),
    h("dl", { className: "meta" },
      meta.map(([key, value]) => h("div", {}, h("dt", {}, key), h("dd", {}, value)))));
}

// Every turn of the record's conversation, and the first record a repeat counts on.
function conversationLink(record) {
  if (!record.conversation) return null;
  const all = h("a", { href: `#/?conversation=${encodeURIComponent(record.conversation)}` },
    record.repeats > 0 ? `all ${record.repeats + 1} turns` : "all turns");
  if (!record.repeat_of) return all;
  return h("span", {}, all, " · repeat of ",
    h("a", { className: "mono", href: `#/r/${encodeURIComponent(record.repeat_of)}` },
      record.repeat_of));
}

function retriedWith(record) {
  const attempts = Array.isArray(record.attempts) ? record.attempts : [];
  const rules = attempts.map((a) => a?.retried_rule).filter((r) => typeof r === "string");
  return rules.length ? rules.join(", ") : null;
}

function upstreamError(record) {
  if (record.upstream_error == null) return null;
  const text = prettyError(record.upstream_error);
  return h("section", { className: "upstream-error" },
    h("h2", {}, `Upstream error${record.upstream_status ? ` (${record.upstream_status})` : ""}`),
    h("pre", { className: "mono" }, text));
}

function findingsList(record) {
  const findings = record.findings || [];
  if (!findings.length) return null;
  const { general } = groupFindings(findings, record.history_key);
  return h("section", { className: "findings" },
    h("h2", {}, `Findings · ${findings.length}`),
    h("ul", {}, findings.map((f) => h("li", {},
      h("span", { className: "rule" }, f.rule), " ",
      actionTag(f.action), " ",
      general.includes(f) ? h("code", {}, f.path) : jump(f.path, record.history_key), " ",
      h("span", { className: "detail" }, f.detail),
      f.hint ? h("div", { className: "hint" }, h("span", { className: "muted" },
        "Fix in the client: "), String(f.hint)) : null))));
}

// Scrolls to the item row a finding is pinned to.
function jump(path, key) {
  const { index } = itemPath(path, key);
  return h("button", { type: "button", className: "link mono",
    onclick: () => flash(document.getElementById(`msg-${index}`)) }, path);
}

// Shell-quotes a word for the copied command line.
function shellWord(word) {
  const text = String(word);
  return /^[\w.:@%+=,/-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function reproduce(record) {
  const api = record.api ? ` --api ${shellWord(record.api)}` : "";
  const command = `toolcall-guard check history.json${api} --upstream ${shellWord(record.upstream)} --fix`;
  const json = (body) => `${JSON.stringify(body, null, 2)}\n`;
  const forwarded = copyButton("Copy forwarded body", () => json(record.forwarded));
  forwarded.disabled = record.forwarded == null;
  return h("section", { className: "reproduce" },
    h("h2", {}, "Reproduce locally"),
    h("div", { className: "actions" }, forwarded,
      copyButton("Copy received body", () => json(record.received)),
      copyButton("Copy command", () => command)),
    h("p", { className: "muted" }, "Save the received body as history.json, then run:"),
    h("pre", { className: "mono command" }, command));
}
