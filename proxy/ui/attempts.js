// A record whose request was retried after the upstream refused it (repair on reject): each
// attempt one after the other, with what was sent, what the upstream answered, and, from the
// second on, the rule the retry applied to the body the upstream had refused.

import { findingTag, h, prettyError } from "./dom.js";
import { comparison } from "./compare.js";

// The attempts section, or null for a record sent once (no `attempts`, or just one).
export function attemptsSection(record) {
  const attempts = Array.isArray(record.attempts) ? record.attempts : [];
  if (attempts.length < 2) return null;
  return h("section", { className: "attempts" },
    h("p", { className: "muted" }, `Sent ${attempts.length} times: the upstream refused the `,
      "first attempt, the proxy repaired what the refusal named and sent the request again."),
    attempts.map((attempt, i) => attemptBlock(record, attempts, i)));
}

function attemptBlock(record, attempts, i) {
  const attempt = attempts[i] && typeof attempts[i] === "object" ? attempts[i] : {};
  const rule = i > 0 ? ruleBefore(attempts, i) : null;
  const note = rule ? { rule, action: "retry", detail: "applied on this retry" } : null;
  return h("div", { className: "attempt", "data-attempt": i + 1 },
    h("h2", { className: "attempt-head" }, `Attempt ${i + 1} of ${attempts.length}`, " ",
      statusTag(attempt.upstream_status),
      attempt.upstream_error_kind ? h("span", { className: "muted mono" },
        String(attempt.upstream_error_kind)) : null,
      note ? findingTag(note) : null),
    errorBox(attempt),
    comparison({
      title: i === 0 ? "Received → sent" : `Attempt ${i} → attempt ${i + 1}`,
      heading: "h3",
      sides: i === 0 ? ["Received", "Sent"] : [`Sent in attempt ${i}`, `Sent in attempt ${i + 1}`],
      before: i === 0 ? record.received : attempts[i - 1]?.forwarded,
      after: attempt.forwarded,
      findings: i === 0 ? record.findings : [],
      prefix: i === 0 ? "" : `a${i + 1}-`,
      unchanged: sentAsIs(attempt),
      note,
      key: record.history_key,
      noun: record.noun,
      views: attemptViews(record, i),
    }));
}

// The row's views of the bodies attempt i compares: what came before it, and what it sent.
function attemptViews(record, i) {
  const sent = Array.isArray(record.views?.attempts) ? record.views.attempts : [];
  return [i === 0 ? record.views?.received : sent[i - 1], sent[i]];
}

// What happened to an attempt that sent its history as it came: under a record that reads
// "repaired", "Forwarded unchanged" would say the opposite of what the retry did next.
function sentAsIs(attempt) {
  const status = attempt.upstream_status;
  if (typeof status === "number" && status >= 400) {
    return `Sent as received, refused by the upstream (${status})`;
  }
  return "Sent as received";
}

// The rule whose repair made attempt i: the repair log puts it on the attempt it was applied
// to (`retried_rule`: "the rule whose repair made the next attempt"); an attempt that names
// its own rule is read too.
function ruleBefore(attempts, i) {
  const rule = attempts[i - 1]?.retried_rule ?? attempts[i]?.retried_rule;
  return typeof rule === "string" && rule ? rule : null;
}

function statusTag(status) {
  if (typeof status !== "number") return h("span", { className: "muted" }, "no answer");
  const kind = status < 400 ? "ok" : "refused";
  return h("span", { className: `badge badge-${kind} attempt-status` }, `upstream ${status}`);
}

function errorBox(attempt) {
  if (attempt.upstream_error == null) return null;
  return h("pre", { className: "mono upstream-error-text" }, prettyError(attempt.upstream_error));
}
