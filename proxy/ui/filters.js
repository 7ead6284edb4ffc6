// The filter bar. Its state is the URL's query (#/?outcome=rejected&range=1h), so a filtered
// view can be bookmarked and the back button works.

import { ENDINGS, h, OUTCOMES } from "./dom.js";

export const FILTERS = ["upstream", "model", "outcome", "ending", "rule", "conversation", "range",
  "since", "until", "live"];

const RANGES = [["", "any time"], ["15m", "last 15 minutes"], ["1h", "last hour"],
  ["24h", "last 24 hours"], ["7d", "last 7 days"], ["custom", "between…"]];
const RANGE_MS = { "15m": 9e5, "1h": 3.6e6, "24h": 8.64e7, "7d": 6.048e8 };
const TYPE_DELAY_MS = 350;

// since/until for the API, as ISO instants (a preset range moves with the clock).
export function rangeBounds(params) {
  if (RANGE_MS[params.range]) {
    return { since: new Date(Date.now() - RANGE_MS[params.range]).toISOString() };
  }
  if (params.range !== "custom") return {};
  const iso = (local) => {
    const d = new Date(local || "");
    return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
  };
  return { since: iso(params.since), until: iso(params.until) };
}

// onChange(params) when a filter changes, onLive(live, params) when live refresh is toggled.
// Returns {element, set(name, value), suggest(name, values)}.
export function filterForm(params, { onChange, onLive }) {
  const lists = { upstream: h("datalist", { id: "dl-upstream" }),
    rule: h("datalist", { id: "dl-rule" }) };
  const text = (name, placeholder) => {
    const input = h("input", { name, type: "search", placeholder, value: params[name] || "",
      autocomplete: "off", ariaLabel: name });
    if (lists[name]) input.setAttribute("list", lists[name].id);
    return input;
  };
  const outcome = h("select", { name: "outcome", ariaLabel: "outcome" },
    h("option", { value: "" }, "any outcome"),
    OUTCOMES.map((o) => h("option", { value: o }, o.replace("_", " "))));
  outcome.value = params.outcome || "";
  const ending = h("select", { name: "ending", ariaLabel: "ending" },
    h("option", { value: "" }, "any ending"),
    ENDINGS.map((e) => h("option", { value: e }, e.replace("_", " "))));
  ending.value = params.ending || "";
  const range = h("select", { name: "range", ariaLabel: "time range" },
    RANGES.map(([value, label]) => h("option", { value }, label)));
  range.value = params.range || "";
  const since = h("input", { name: "since", type: "datetime-local", value: params.since || "",
    ariaLabel: "since" });
  const until = h("input", { name: "until", type: "datetime-local", value: params.until || "",
    ariaLabel: "until" });
  const custom = h("span", { className: "custom-range", hidden: range.value !== "custom" },
    since, h("span", { className: "muted" }, "to"), until);
  const live = h("input", { type: "checkbox", name: "live", checked: params.live !== "0" });
  const form = h("form", { className: "filters", ariaLabel: "filters" },
    text("upstream", "upstream"), text("model", "model"), outcome, ending, text("rule", "rule"),
    text("conversation", "conversation"), range,
    custom, lists.upstream, lists.rule,
    h("label", { className: "live" }, live, " live"),
    h("button", { type: "reset", className: "link" }, "clear"));

  const current = () => {
    const data = Object.fromEntries(new FormData(form));
    const next = {};
    for (const name of FILTERS) if (data[name]) next[name] = String(data[name]).trim();
    next.live = live.checked ? undefined : "0";
    if (next.range !== "custom") {
      delete next.since;
      delete next.until;
    }
    return next;
  };
  let typing = null;
  let last = JSON.stringify(current());
  const changed = () => {
    clearTimeout(typing);
    custom.hidden = range.value !== "custom";
    const next = current();
    if (JSON.stringify(next) === last) return; // a blur after typing, an empty reset
    last = JSON.stringify(next);
    onChange(next);
  };
  form.addEventListener("submit", (event) => { event.preventDefault(); changed(); });
  form.addEventListener("change", (event) => { if (event.target !== live) changed(); });
  form.addEventListener("input", (event) => {
    if (event.target.type !== "search") return;
    clearTimeout(typing);
    typing = setTimeout(changed, TYPE_DELAY_MS);
  });
  form.addEventListener("reset", () => {
    const wasLive = live.checked;
    setTimeout(() => { // after the browser has cleared the fields
      live.checked = wasLive;
      changed();
    });
  });
  live.addEventListener("change", () => {
    last = JSON.stringify(current());
    onLive(live.checked, current());
  });

  return {
    element: form,
    set(name, value) {
      form.elements[name].value = value;
      changed();
    },
    suggest(name, values) {
      lists[name]?.replaceChildren(...values.map((v) => h("option", { value: v })));
    },
  };
}
