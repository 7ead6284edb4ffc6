// Counts by outcome, rule and upstream for the records the list shows; a click on a count
// filters by it. Without filters (bar a start time) /repairs/stats counts the whole log; with
// any, the counts come from the matching summaries themselves (/repairs, bounded), so they
// always describe what is listed.

import { getJSON } from "./api.js";
import { badge, h } from "./dom.js";

const GROUPS = [["outcome", "outcomes"], ["rule", "rules"], ["upstream", "upstreams"]];
const NARROWING = ["upstream", "model", "outcome", "rule", "until"];
const COUNT_PAGE = 500; // the API's largest page
const COUNT_PAGES = 4;

function narrowed(query) {
  return NARROWING.some((name) => query[name]);
}

// Counts of the records matching `query`, from their summaries; `capped` when more match
// than were counted (the newest COUNT_PAGE × COUNT_PAGES).
async function countMatching(query) {
  const stats = { by_outcome: {}, by_rule: {}, by_upstream: {}, total: 0, capped: false };
  const add = (counts, key) => { counts[key] = (counts[key] || 0) + 1; };
  let cursor = null;
  for (let page = 0; page < COUNT_PAGES; page++) {
    const res = await getJSON("/repairs", { ...query, limit: COUNT_PAGE, cursor });
    for (const r of res.data) {
      stats.total++;
      add(stats.by_outcome, r.outcome);
      add(stats.by_upstream, r.upstream);
      for (const rule of Object.keys(r.rules || {})) add(stats.by_rule, rule);
    }
    cursor = res.next_cursor;
    if (!cursor) return stats;
  }
  return { ...stats, capped: true };
}

// onPick(name, value) when a count is clicked; onStats({rule: [...], upstream: [...]}) with the
// names seen, for the filters' suggestions.
export function statsPanel({ onPick, onStats }) {
  const element = h("section", { className: "stats", ariaLabel: "counts" });
  let generation = 0;
  // query: the list's filters and time bounds.
  const load = async (query) => {
    const mine = ++generation;
    const filtered = narrowed(query);
    let stats;
    try {
      stats = filtered ? await countMatching(query)
        : await getJSON("/repairs/stats", { since: query.since });
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
    if (!element.childElementCount) {
      element.append(h("span", { className: "muted" }, filtered ? "no matching records" : "no records yet"));
    } else if (filtered) {
      element.append(h("span", { className: "muted stat-scope" }, stats.capped
        ? `counts of the newest ${stats.total.toLocaleString()} matching records`
        : "counts of the matching records"));
    }
    element.dataset.scope = filtered ? "filtered" : "all";
    // Suggestions for the filters come from the whole log, not from a filtered view.
    if (!filtered) {
      onStats(Object.fromEntries(groups.map(([name, , pairs]) => [name, pairs.map(([k]) => k)])));
    }
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
