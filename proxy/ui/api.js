// The JSON API (/repairs…) and the admin token. The token lives in this tab's sessionStorage
// only; on 401 the page asks for it once and every waiting request retries with it. A 403 is
// no question of the token: with `admin_token_required` the proxy has none configured (it
// listens beyond loopback), so the page says what to change instead of asking for one.

import { h } from "./dom.js";

const TOKEN_KEY = "toolcall-guard.admin-token";

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function query(params) {
  const qs = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") qs.set(key, value);
  }
  const text = qs.toString();
  return text ? `?${text}` : "";
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export async function getJSON(path, params) {
  const url = path + query(params);
  for (;;) {
    const token = getToken();
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(url, { headers, cache: "no-store" });
    if (res.ok) return res.json();
    const error = await errorOf(res);
    if (res.status === 403 && error.code === "admin_token_required") {
      await noTokenCanWork(error);
      throw error;
    }
    if (res.status !== 401) throw error;
    // Another request may have obtained a new token while this one was in flight.
    if (getToken() === token) await askToken(error, token !== null);
  }
}

async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not our JSON (a proxy in between, an HTML error page): the status says enough.
  }
  const err = body && typeof body === "object" ? body.error || {} : {};
  const message = typeof err.message === "string" ? err.message : `HTTP ${res.status}`;
  return new ApiError(res.status, message, err.code);
}

let pending = null;

// One dialog for every request that hit 401/403 at the same time.
function askToken(error, hadToken) {
  if (!pending) {
    pending = tokenDialog(error, hadToken).finally(() => { pending = null; });
  }
  return pending;
}

let closedShown = null;

// Said once per page: no token typed here can open a log the proxy keeps closed.
function noTokenCanWork(error) {
  if (!closedShown) {
    closedShown = new Promise((resolve) => {
      const ok = h("button", { type: "submit", className: "btn btn-primary" }, "Close");
      const form = h("form", { className: "token-form" },
        h("h2", {}, "The repair log is closed to the network"),
        h("p", {}, "The proxy listens beyond loopback and has no admin token configured, so no ",
          "token typed here can open it."),
        h("p", {}, "Set ", h("code", {}, "TOOLCALL_GUARD_ADMIN_TOKEN"), " (the variable ",
          h("code", {}, "server.admin_token_env"), " names) where the proxy runs and restart ",
          "it, then reload this page and give that token."),
        h("p", { className: "muted" }, `The server answered ${error.status}: ${error.message}`),
        h("div", { className: "actions" }, ok));
      const dialog = h("dialog", { className: "token-dialog closed-dialog" }, form);
      form.addEventListener("submit", (event) => { event.preventDefault(); dialog.close(); });
      dialog.addEventListener("close", () => { dialog.remove(); resolve(); });
      document.body.append(dialog);
      dialog.showModal();
      ok.focus();
    });
  }
  return closedShown;
}

function tokenDialog(error, hadToken) {
  return new Promise((resolve, reject) => {
    const input = h("input", { type: "password", name: "token", autocomplete: "off",
      required: true, placeholder: "admin token", ariaLabel: "Admin token" });
    const cancel = h("button", { type: "button", className: "btn" }, "Cancel");
    const form = h("form", { className: "token-form" },
      h("h2", {}, hadToken ? "The admin token was not accepted" : "Admin token needed"),
      h("p", { className: "muted" }, `The server answered ${error.status}: ${error.message}`),
      h("p", {}, "It is kept in this tab only (sessionStorage) and sent as a Bearer token."),
      // With client keys configured, a client key opens the records it sent (its owner's view).
      error.message.includes("client key")
        ? h("p", {}, "A client key of this proxy opens the records that key sent.") : null,
      input,
      h("div", { className: "actions" },
        h("button", { type: "submit", className: "btn btn-primary" }, "Use token"), cancel));
    const dialog = h("dialog", { className: "token-dialog" }, form);
    const close = () => { dialog.close(); dialog.remove(); };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      close();
      resolve();
    });
    const giveUp = () => { close(); reject(error); };
    cancel.addEventListener("click", giveUp);
    dialog.addEventListener("cancel", (event) => { event.preventDefault(); giveUp(); });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
