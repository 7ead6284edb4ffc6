// What the viewer knows of a request's history, whichever wire API carried it: chat completions
// keep it in `messages` (each with a `role`), the Responses API in `input` (items with a `type`:
// message, function_call, function_call_output, reasoning, …; a message may omit its type),
// Anthropic Messages in `messages` whose content is a list of blocks (text, tool_use,
// tool_result, thinking, server tools), Gemini in `contents` (a role and parts). The record says
// which key (`history_key`, from the wire API's row: dotted when nested, `request.contents`) and
// how each item reads (`views`: its kind, parts, call ids, functions and text, made by the row):
// what follows reads a view when the record has one, and guesses for an older record.
// Everything here reads untrusted values defensively: a record holds what a client sent.

const KEYS = ["messages", "input", "contents", "request.contents"];
const VIEWS = new WeakMap();

// Remembers the row's view of each item of a history (views[i] for items[i]).
export function useViews(items, views) {
  if (!Array.isArray(items) || !Array.isArray(views)) return;
  items.forEach((item, i) => {
    if (isObject(item) && isObject(views[i])) VIEWS.set(item, views[i]);
  });
}

const viewOf = (item) => (isObject(item) ? VIEWS.get(item) : undefined);

function at(body, key) {
  let value = body;
  for (const step of key.split(".")) value = isObject(value) ? value[step] : undefined;
  return value;
}

// -> {key, items} for the body's history, or null when it has none (not captured, a string
// Responses `input`, which is always clean). `known`: the record's history_key, if any.
export function historyOf(body, known) {
  if (!body || typeof body !== "object") return null;
  for (const key of known ? [known] : KEYS) {
    const items = at(body, key);
    if (Array.isArray(items)) return { key, items };
  }
  return null;
}

// The key the body keeps its history under, also when it is not a list ("input": "Hi").
export function historyKey(body) {
  return body && typeof body === "object" && typeof body.input === "string" ? "input" : "messages";
}

// "messages[3].tool_calls[0].id" / "input[7].call_id" -> {index, rest}; null when the path
// names no single item (e.g. "messages" or a field outside the list). `key`: the record's
// history_key (without it, any API's).
export function itemPath(path, key) {
  const text = String(path ?? "");
  for (const head of key ? [key] : KEYS) {
    if (!text.startsWith(`${head}[`)) continue;
    const m = /^\[(\d+)\](?:\.?(.*))?$/.exec(text.slice(head.length));
    if (m) return { index: Number(m[1]), rest: m[2] || "" };
  }
  return null;
}

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

const str = (v) => (typeof v === "string" ? v : "");

// "user", "assistant", "tool" for chat messages; the item type for Responses items
// ("message" items read as their role, like chat messages).
export function kindOf(item) {
  if (!isObject(item)) return "?";
  const view = viewOf(item);
  if (view) return str(view.kind) || "?";
  const type = str(item.type);
  if (type && type !== "message") return type;
  return str(item.role) || type || "?";
}

// The call ids an item makes or answers: chat tool_calls[].id and tool_call_id, Responses
// call_id (and the approval an mcp_approval_response answers).
export function callIds(item) {
  const ids = new Set();
  if (!isObject(item)) return ids;
  const view = viewOf(item);
  if (view) return new Set((Array.isArray(view.ids) ? view.ids : []).filter((id) => str(id)));
  for (const key of ["tool_call_id", "call_id", "approval_request_id"]) {
    if (typeof item[key] === "string") ids.add(item[key]);
  }
  for (const call of Array.isArray(item.tool_calls) ? item.tool_calls : []) {
    if (call && typeof call.id === "string") ids.add(call.id);
  }
  for (const block of blocksOf(item)) {  // Messages: tool_use ids, tool_result's tool_use_id
    if (typeof block.tool_use_id === "string") ids.add(block.tool_use_id);
    else if (USES.has(block.type) && typeof block.id === "string") ids.add(block.id);
  }
  return ids;
}

// Content block types only Anthropic Messages has: an item carrying one is labelled with its
// blocks' types ("#3 user [tool_result, text]").
const USES = new Set(["tool_use", "server_tool_use"]);
const ANTHROPIC = new Set([...USES, "tool_result", "thinking", "redacted_thinking"]);
const isAnthropic = (type) => ANTHROPIC.has(type) || /_tool_result$/.test(type);

function blocksOf(item) {
  return Array.isArray(item.content) ? item.content.filter(isObject) : [];
}

function partText(p) {
  if (!isObject(p)) return "";
  if (typeof p.text === "string") return p.text;
  if (typeof p.thinking === "string") return p.thinking;
  if (p.type !== "tool_result") return "";
  if (typeof p.content === "string") return p.content;
  return Array.isArray(p.content) ? partsText(p.content) : "";
}

function partsText(parts) {
  return parts.map(partText).join("");
}

// The text an item carries: a message's content (string or parts), a call output's `output`,
// a reasoning item's summary.
export function textOf(item) {
  if (!isObject(item)) return "";
  const view = viewOf(item);
  if (view) return str(view.text);
  for (const key of ["content", "output"]) {
    const value = item[key];
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return partsText(value);
  }
  return Array.isArray(item.summary) ? partsText(item.summary) : "";
}

// The names of the functions an item calls (chat tool_calls, a Responses call's `name`).
export function callNames(item) {
  if (!isObject(item)) return "";
  const view = viewOf(item);
  if (view) return (Array.isArray(view.names) ? view.names : []).map(str).join("\n");
  if (Array.isArray(item.tool_calls)) {
    return item.tool_calls.map((c) => String(c?.function?.name ?? "")).join("\n");
  }
  const uses = blocksOf(item).filter((b) => USES.has(b.type));
  if (uses.length) return uses.map((b) => str(b.name)).join("\n");
  return str(item.name);
}

// "#3 tool · call_b2", "#7 function_call · call_x", "#0 user",
// "#4 user [tool_result, text] · toolu_1" (a Messages item with its blocks).
export function itemLabel(item, index) {
  const ids = [...callIds(item)];
  const id = kindOf(item) === "assistant" || !ids.length ? "" : ` · ${ids.join(", ")}`;
  const view = viewOf(item);
  const types = view ? (Array.isArray(view.tags) ? view.tags.map(str) : [])
    : isObject(item) ? blocksOf(item).map((b) => str(b.type)) : [];
  const shown = view ? types.length > 0 : types.some(isAnthropic);
  const blocks = shown ? ` [${types.join(", ")}]` : "";
  return `#${index} ${kindOf(item)}${blocks}${id}`;
}

// One line saying what the item is about.
export function preview(item) {
  if (!isObject(item)) return "";
  const text = textOf(item);
  if (text) return text.replace(/\s+/g, " ").slice(0, 120);
  const names = callNames(item).split("\n").filter(Boolean);
  if (names.length) return `calls ${names.join(", ")}`;
  if (typeof item.encrypted_content === "string") return "encrypted reasoning";
  return "";
}
