"""The Markdown of ``bench/results/latest.md`` out of a run's figures, and its targets table
(what ``make bench`` prints)."""

from __future__ import annotations

import dataclasses
from typing import Any

from bench import cost, growth, phases, report, sessions, tables, tracing


def render(
    meta: dict[str, str], config: phases.Config, out: dict[str, Any], sanitizer: str
) -> tuple[str, str]:
    fig = report.Figures(out["rows"])
    pacing = report.Pacing(out["pacing"], config.pace_ms)
    extra = tracing.goal_rows(fig, out.get("off_modules"))
    extra += cost.parse_rows(fig) if "parse" in fig.targets and "guard" in fig.targets else []
    extra += cost.sessions_rows(out.get("sessions") or {})
    extra += cost.growth_rows(out.get("growth") or {})
    summary = report.summary(fig, pacing, out["leaks"], extra)
    sizes = ", ".join(f"{f.name}={getattr(config, f.name)}" for f in dataclasses.fields(config))
    head = [f"- **{k}**: {v}" for k, v in meta.items()]
    head += [
        f"- **load generator**: {out['loader']}",
        f"- **sizes**: {sizes}",
        f"- **targets measured**: {', '.join(report.NAMES[t] for t in out['targets'])}",
        f"- **toolcall-guard**: openai preset, repair log {out['repair_log']}",
    ]
    parts = [
        "# Benchmark results",
        "",
        *head,
        "",
        "Medians over rounds; targets interleaved within each round; added = target - direct in "
        "the same round. Floor = raw ASGI on uvicorn + aiohttp client (bench/floor.py). "
        "CPU µs/req = CPU time of the server process the client talks to, per request: on this "
        "shared machine the steadiest figure (latency and req/s move with the neighbours' load).",
        "",
        "## Targets",
        "",
        summary or "(toolcall-guard not measured)",
        "",
        *(
            [
                "What parsing alone costs: the floor that also parses each POST body once "
                "(orjson, the result held until the answer is relayed), interleaved in this run. "
                "Its ratio to the floor is the ceiling of any proxy that reads the body:",
                "",
                tables.ceiling_table(fig),
                "",
            ]
            if {"parse", "guard"} <= set(out["targets"])
            else []
        ),
        "## Per scenario",
        "",
        "Requests per second at each concurrency, floor / toolcall-guard (guard ÷ floor):",
        "",
        tables.rate_table(fig),
        "",
        "CPU µs per request of the server process the client talks to (its threads' run time from "
        "`/proc/<pid>/task/*/schedstat` over the run ÷ its requests):",
        "",
        tables.cpu_table(fig),
        "",
        *(
            [
                "toolcall-guard before (`--baseline`) and after, interleaved in this run:",
                "",
                tables.before_after_table(fig),
                "",
            ]
            if "base" in out["targets"]
            else []
        ),
        "## Latency, concurrency 1 (ms)",
        "",
        report.latency_table(fig),
        "",
        "## Throughput, concurrency 10 and 32",
        "",
        report.throughput_table(fig),
        "",
        f"## Paced streams ({config.pacing_chunks} chunks, {config.pace_ms:g} ms apart, "
        "concurrency 1, aiohttp client)",
        "",
        report.pacing_table(pacing, phases.streaming(out["targets"]), config.pacing_chunks),
        "",
        f"## Agent sessions ({sessions.SESSIONS} conversations at once, {sessions.TURNS} turns)",
        "",
        "Each turn is the previous history plus a user message, a tool call and its result; "
        "broken conversations lost their first assistant message's `tool_calls` (seed 000), "
        "so every turn is repaired and recorded (rounds alternate clean and broken; medians). "
        "CPU includes recording (the repair-log writer thread); bytes are the SQLite log's "
        "growth per broken conversation, checkpointed (bench/sessions.py):",
        "",
        sessions.table(out.get("sessions", {})),
        "",
        f"## One conversation of {growth.TURNS} turns through `toolcall-guard serve`",
        "",
        "The same conversation shape, deepseek-shaped, sent turn after turn through the real "
        "`serve` command (SQLite log) to the DeepSeek emulator, each in its own process; clean "
        "and broken conversations alternate. CPU: user + system of the whole serve process until "
        "the writer has flushed every record; log: its growth per broken conversation, "
        "checkpointed (bench/growth.py):",
        "",
        growth.table(out.get("growth", {})),
        "",
        "## Memory",
        "",
        tables.memory_tables(out, config.streams, fig),
        "",
        "Leak check mix: small json, small stream, 200-message json at concurrency 32 in a fresh "
        "process (the broken history is left out: its repair records are kept by design).",
        "",
        "## Sanitizer micro-benchmark (bench/sanitize.py)",
        "",
        sanitizer,
        "",
        "## Response check",
        "",
        *[f"- {k}: {v}" for k, v in out["check"].items()],
        "",
        "## Server output (last lines; none expected)",
        "",
        *[f"- {report.NAMES[t]}: {_quote(text)}" for t, text in out["logs"].items()],
        *[
            f"- {report.NAMES[t]} (leak check): {_quote(leak['log'])}"
            for t, leak in out["leaks"].items()
        ],
        "",
    ]
    return "\n".join(parts), summary


def _quote(text: str) -> str:
    return "(nothing)" if not text.strip() else "\n\n```\n" + text + "\n```"
