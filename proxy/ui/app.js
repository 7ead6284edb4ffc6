// The viewer's entry point: a hash router over two views, the list (#/?filters) and one
// record (#/r/<id>). The list stays in the page while a record is open, so going back keeps
// its loaded pages and scroll position.

import { ApiError } from "./api.js";
import { h } from "./dom.js";
import { FILTERS } from "./filters.js";
import { showList } from "./list.js";
import { recordPage } from "./record.js";

const listView = document.getElementById("list-view");
const recordView = document.getElementById("record-view");
let list = null; // {hash, scrollY, pause, resume, stop}
let navigation = 0;

function listHash(params) {
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v)).toString();
  return qs ? `#/?${qs}` : "#/";
}

function parse(hash) {
  const record = /^#\/r\/([^?]+)$/.exec(hash);
  if (record) return { id: decodeURIComponent(record[1]) };
  const q = hash.indexOf("?");
  const all = new URLSearchParams(q < 0 ? "" : hash.slice(q + 1));
  const params = {};
  for (const name of FILTERS) if (all.get(name)) params[name] = all.get(name);
  return { params };
}

async function route() {
  const mine = ++navigation;
  const where = parse(location.hash);
  if (where.id === undefined) {
    showListView(where.params);
    return;
  }
  if (list) {
    list.pause();
    list.scrollY = window.scrollY;
  }
  listView.hidden = true;
  recordView.hidden = false;
  recordView.replaceChildren(h("p", { className: "muted" }, "Loading record…"));
  document.title = "Record · toolcall-guard";
  window.scrollTo(0, 0);
  let nodes;
  try {
    nodes = await recordPage(where.id, list ? list.hash : "#/");
  } catch (err) {
    nodes = [errorBox(err, where.id)];
  }
  if (mine === navigation) recordView.replaceChildren(...nodes);
}

function showListView(params) {
  recordView.hidden = true;
  recordView.replaceChildren();
  listView.hidden = false;
  const hash = listHash(params);
  if (list && list.hash === hash) {
    list.resume();
    window.scrollTo(0, list.scrollY || 0);
    return;
  }
  list?.stop();
  const controls = showList(listView, params, (next) => {
    list.hash = listHash(next);
    history.replaceState(null, "", list.hash);
  });
  list = { ...controls, hash, scrollY: 0 };
}

function errorBox(err, id) {
  const text = err instanceof ApiError && err.status === 404
    // Records are readable as soon as the proxy answers, so a 404 means this id was never
    // recorded here (a clean request gets no record), not that it is still being written.
    ? "There is no record with this id in this proxy's repair log."
    : `Could not load the record: ${err.message}`;
  return h("div", { className: "error-box" },
    h("p", {}, text), h("p", { className: "mono muted" }, id),
    h("a", { href: list ? list.hash : "#/" }, "← All records"));
}

window.addEventListener("hashchange", route);
route();
