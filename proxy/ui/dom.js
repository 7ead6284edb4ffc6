// DOM helpers. Every value from the API is untrusted: it only ever reaches the page as a text
// node or a property set here, never as markup.

const PROPS = new Set(["className", "href", "title", "type", "value", "name", "id", "htmlFor",
  "checked", "disabled", "placeholder", "hidden", "open", "autocomplete", "dateTime", "min",
  "max", "step", "required", "ariaLabel", "ariaLive", "ariaExpanded", "ariaHidden"]);

// h("a", {className: "row", href: "#/"}, "text", child, [more, children])
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key.startsWith("data-")) el.dataset[camel(key.slice(5))] = String(value);
    else if (PROPS.has(key)) el[key] = value;
    else throw new Error(`h(): unexpected property ${key}`);
  }
  append(el, children);
  return el;
}

function camel(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export const OUTCOMES = ["repaired", "rejected", "warned", "upstream_rejected"];

export function badge(outcome) {
  const known = OUTCOMES.includes(outcome) ? outcome : "unknown";
  return h("span", { className: `badge badge-${known}` }, String(outcome ?? "?").replace("_", " "));
}

// How an answer ended, when not whole: what the client got was cut, or never finished.
export const ENDINGS = ["complete", "upstream_cut", "upstream_timeout", "client_gone"];
const ENDING_LABELS = { upstream_cut: "cut by upstream", upstream_timeout: "upstream stalled",
  client_gone: "client left" };

// A mark for an answer that did not end whole (null for a whole one, or one not known).
export function endingMark(ending) {
  const label = ENDING_LABELS[ending];
  return label ? h("span", { className: `ending ending-${ending}`, title: ending }, label) : null;
}

// Reject red, warn yellow, any repair green: the same colours wherever an action is shown.
export function actionKind(action) {
  return action === "reject" || action === "warn" ? action : "repair";
}

export function actionTag(action) {
  return h("span", { className: `action action-${actionKind(action)}` }, String(action ?? ""));
}

// "rule action detail", as findings are shown in message headers.
export function findingTag(finding) {
  return h("span", { className: `pin-note note-${actionKind(finding.action)}` },
    h("span", { className: "rule" }, String(finding.rule ?? "")), " ", actionTag(finding.action),
    finding.detail ? [" ", h("span", { className: "detail" }, String(finding.detail))] : null);
}

// An upstream's error body, pretty-printed when it is JSON, else as received (an HTML page).
export function prettyError(body) {
  const text = String(body);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const pad = (n) => String(n).padStart(2, "0");

// Local time, short when it is today; the full ISO string goes into the title.
export function timeLabel(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h("span", {}, String(iso ?? ""));
  const now = new Date();
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const sameDay = d.toDateString() === now.toDateString();
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return h("time", { dateTime: d.toISOString(), title: d.toISOString() },
    sameDay ? clock : `${day} ${clock}`);
}

export function duration(ms) {
  if (typeof ms !== "number") return "";
  return ms < 1000 ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

// Counts of each rule among a record's findings, in first-seen order.
export function ruleCounts(findings) {
  const counts = new Map();
  for (const f of findings || []) counts.set(f.rule, (counts.get(f.rule) || 0) + 1);
  return counts;
}

export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Plain http on a LAN address is not a secure context: fall back to a selection copy.
  const area = h("textarea", { className: "offscreen", value: text });
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("the browser refused to copy");
}

// A button that copies text() and says so for a moment.
export function copyButton(label, text) {
  const button = h("button", { type: "button", className: "btn" }, label);
  button.addEventListener("click", async () => {
    try {
      await copyText(text());
      flashLabel(button, "Copied", label);
    } catch (err) {
      flashLabel(button, `Copy failed: ${err.message}`, label);
    }
  });
  return button;
}

function flashLabel(button, message, label) {
  button.textContent = message;
  setTimeout(() => { button.textContent = label; }, 1500);
}
