// Counts by outcome, rule and upstream from /repairs/stats; a click on a count filters by it.

import { getJSON } from "./api.js";
import { badge, h } from "./dom.js";

const GROUPS = [["outcome", "outcomes"], ["rule", "rules"], ["upstream", "upstreams"]];

// onPick(name, value) when a count is clicked; onStats({rule: [...], upstream: [...]}) with the
// names seen, for the filters' suggestions.
export function statsPanel({ onPick, onStats }) {
  const element = h("section", { className: "stats", ariaLabel: "counts" });
  let generation = 0;
  const load = async (since) => {
    const mine = ++generation;
    let stats;
    try {
      stats = await getJSON("/repairs/stats", { since });
    } catch (err) {
      if (mine === generation) {
        element.replaceChildren(h("span", { className: "muted" }, `counts unavailable: ${err.message}`));
      }
      return;
    }
    if (mine !== generation) return;
    const groups = GROUPS.map(([name, title]) => [name, title, countsOf(stats, name)]);
    element.replaceChildren(...groups.filter(([, , pairs]) => pairs.length)
      .map(([name, title, pairs]) => group(name, title, pairs, onPick)));
    if (!element.childElementCount) element.append(h("span", { className: "muted" }, "no records yet"));
    onStats(Object.fromEntries(groups.map(([name, , pairs]) => [name, pairs.map(([k]) => k)])));
  };
  return { element, load };
}

function group(name, title, pairs, onPick) {
  return h("div", { className: `stat-group stat-${name}` },
    h("span", { className: "stat-title" }, title),
    pairs.map(([key, count]) => h("button", { type: "button", className: "stat",
      title: `show only ${name} ${key}`, "data-key": key, onclick: () => onPick(name, key) },
    name === "outcome" ? badge(key) : h("span", { className: "stat-key" }, key),
    h("span", { className: "count" }, count.toLocaleString()))));
}

// Accepts {by_rule: {name: n}}, {rules: {...}}, {rule: [...]}, and lists of {rule, count} or
// [name, n]; sorted by count, largest first.
export function countsOf(stats, name) {
  if (!stats || typeof stats !== "object") return [];
  const raw = [`by_${name}`, `${name}s`, name].map((k) => stats[k]).find((v) => v && typeof v === "object");
  if (!raw) return [];
  const pairs = Array.isArray(raw)
    ? raw.map((item) => (Array.isArray(item) ? item : [item[name] ?? item.name ?? item.key, item.count]))
    : Object.entries(raw);
  return pairs.filter(([k, n]) => k != null && typeof n === "number")
    .map(([k, n]) => [String(k), n]).sort((a, b) => b[1] - a[1]);
}
