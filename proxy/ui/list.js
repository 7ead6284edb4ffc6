// The list of records, newest first: filters, counts per rule, live refresh, "load more".
// Pages come from the cursor API, so a 100,000-record log is never fetched whole.

import { ApiError, getJSON } from "./api.js";
import { actionKind, badge, duration, endingMark, h, ruleCounts, timeLabel } from "./dom.js";
import { filterForm, rangeBounds } from "./filters.js";
import { statsPanel } from "./stats.js";

const PAGE = 50;
const POLL_MS = 4000;

// params: the filters from the URL; onParams(params) records changed filters in the URL.
// Returns {pause, resume, stop}: the list stays in the page (and keeps its loaded pages) while
// a record is open.
export function showList(view, params, onParams) {
  let form = null;
  const list = new RecordList(params, {
    onPick: (name, value) => form.set(name, value),
    onStats: (names) => {
      form.suggest("upstream", names.upstream);
      form.suggest("rule", names.rule);
    },
  });
  form = filterForm(params, {
    onChange: (next) => {
      onParams(next);
      list.params = next;
      list.reload();
    },
    onLive: (live, next) => {
      onParams(next);
      list.params = next;
      list.setLive(live);
    },
  });
  view.replaceChildren(form.element, list.stats.element, list.element);
  document.title = "Repairs · toolcall-guard";
  list.reload();
  list.setLive(params.live !== "0");
  return {
    pause: () => list.setLive(false),
    resume: () => {
      document.title = "Repairs · toolcall-guard";
      if (list.params.live === "0") return;
      list.setLive(true);
      list.poll();
    },
    stop: () => list.stop(),
  };
}

class RecordList {
  constructor(params, statsHooks) {
    this.params = params;
    this.generation = 0;
    this.ids = new Set();
    this.cursor = null;
    this.timer = null;
    this.busy = false;
    this.stats = statsPanel(statsHooks);
    this.rows = h("div", { className: "rows" });
    this.more = h("button", { type: "button", className: "btn more", hidden: true,
      onclick: () => this.loadMore() }, "Load more");
    this.status = h("p", { className: "status muted", ariaLive: "polite" });
    this.element = h("section", { className: "records" }, headRow(), this.rows, this.status,
      this.more);
  }

  // The filters and time bounds; the stats panel counts what they match.
  filters() {
    const { upstream, model, outcome, ending, rule, conversation } = this.params;
    return { upstream, model, outcome, ending, rule, conversation, ...rangeBounds(this.params) };
  }

  async reload() {
    const generation = ++this.generation;
    this.ids.clear();
    this.cursor = null;
    this.rows.replaceChildren();
    this.more.hidden = true;
    this.say("Loading…");
    this.stats.load(this.filters());
    const page = await this.fetchPage(generation, null);
    if (page) this.append(page.data, page.next_cursor);
  }

  async loadMore() {
    this.more.disabled = true;
    const page = await this.fetchPage(this.generation, this.cursor);
    if (page) this.append(page.data, page.next_cursor);
    this.more.disabled = false;
  }

  // The page, or null when it failed or the filters changed meanwhile.
  async fetchPage(generation, cursor) {
    try {
      const page = await getJSON("/repairs", { ...this.filters(), limit: PAGE, cursor });
      return generation === this.generation ? page : null;
    } catch (err) {
      if (generation === this.generation) this.fail(err);
      return null;
    }
  }

  append(records, cursor) {
    for (const r of records) {
      if (this.ids.has(r.id)) continue;
      this.ids.add(r.id);
      this.rows.append(row(r));
    }
    this.cursor = cursor ?? null;
    this.footer();
  }

  // New records since the last look go on top. When the whole first page is new (or empty)
  // there may be a gap behind it, so the list starts over from that page.
  async poll() {
    if (this.busy || document.hidden) return;
    this.busy = true;
    const generation = this.generation;
    const page = await this.fetchPage(generation, null).finally(() => { this.busy = false; });
    if (!page) return;
    const fresh = [];
    for (const r of page.data) {
      if (this.ids.has(r.id)) break;
      fresh.push(r);
    }
    if (fresh.length === page.data.length) {
      this.ids.clear();
      this.rows.replaceChildren();
      this.cursor = page.next_cursor ?? null;
    }
    this.prepend(fresh);
    this.footer();
    this.stats.load(this.filters());
  }

  prepend(records) {
    const rows = records.filter((r) => !this.ids.has(r.id)).map((r) => {
      this.ids.add(r.id);
      const el = row(r);
      el.classList.add("fresh");
      return el;
    });
    this.rows.prepend(...rows);
  }

  setLive(live) {
    clearInterval(this.timer);
    this.timer = live ? setInterval(() => this.poll(), POLL_MS) : null;
  }

  stop() {
    this.setLive(false);
    this.generation++;
  }

  footer() {
    const n = this.ids.size;
    this.more.hidden = !this.cursor;
    if (!n) this.say("No records match these filters.");
    else if (this.cursor) this.say(`Showing the newest ${n} records.`);
    else this.say(n === 1 ? "The only record shown." : `All ${n} records shown.`);
  }

  say(text) {
    this.status.classList.remove("error");
    this.status.replaceChildren(text);
  }

  fail(err) {
    const message = err instanceof ApiError ? `${err.status}: ${err.message}` : err.message;
    this.status.classList.add("error");
    this.status.replaceChildren(`Could not load records (${message}). `,
      h("button", { type: "button", className: "link", onclick: () => this.reload() }, "Retry"));
  }
}

function headRow() {
  return h("div", { className: "row head", ariaHidden: "true" },
    ["time", "outcome", "upstream", "model", "rules", "status", "duration"].map((c) =>
      h("span", { className: `c-${c}` }, c)));
}

const SEVERITY = ["repair", "warn", "reject"];

// Each rule's strongest action in the record, for its chip's colour.
function actionsByRule(findings) {
  const worst = new Map();
  for (const f of Array.isArray(findings) ? findings : []) {
    const kind = actionKind(f?.action);
    if (SEVERITY.indexOf(kind) >= SEVERITY.indexOf(worst.get(f.rule) ?? "repair")) {
      worst.set(f.rule, kind);
    }
  }
  return worst;
}

// A broken conversation's first record: how often its break came back, since when, who sent it
// (the conversation's every turn: the record page links them).
function turns(r) {
  // Parts are nodes (the times are <time> elements), so they are joined as children, never
  // into a string.
  const parts = [];
  if (r.repeats > 0) {
    parts.push(`${r.repeats + 1} turns`, ["since ", timeLabel(r.created_at)]);
    if (r.last_seen) parts.push(["last ", timeLabel(r.last_seen)]);
  } else if (r.repeat_of) {
    parts.push("repeat");
  }
  if (r.client && parts.length) parts.push(String(r.client));
  if (!parts.length) return null;
  return h("span", { className: "turns muted" }, parts.map((p, i) => (i ? [" · ", p] : p)));
}

function row(r) {
  const counts = r.rules && typeof r.rules === "object" ? Object.entries(r.rules)
    : [...ruleCounts(r.findings)];
  const actions = actionsByRule(r.findings);
  const rules = counts.map(([rule, n]) => h("span", {
    className: `chip chip-${actions.get(rule) ?? "repair"}` }, n > 1 ? `${rule} ×${n}` : rule));
  // The status the client got (the proxy's own 502 when the upstream was down), else the
  // upstream's; then why.
  const code = r.status ?? r.upstream_status;
  const why = r.upstream_error_kind ?? r.proxy_error;
  const status = [code, why].filter((v) => v != null).join(" ");
  return h("a", { className: "row", href: `#/r/${encodeURIComponent(r.id)}`, "data-id": r.id },
    h("span", { className: "c-time" }, timeLabel(r.created_at)),
    h("span", { className: "c-outcome" }, badge(r.outcome)),
    h("span", { className: "c-upstream" }, String(r.upstream ?? "")),
    h("span", { className: "c-model mono" }, String(r.model ?? "—")),
    h("span", { className: "c-rules" }, rules, turns(r)),
    h("span", { className: "c-status", title: status || undefined },
      code == null ? null : h("span", { className: "code" }, String(code)),
      why == null ? null : h("span", { className: "err-kind" }, String(why)),
      endingMark(r.ending)),
    h("span", { className: "c-duration" }, duration(r.duration_ms)));
}
