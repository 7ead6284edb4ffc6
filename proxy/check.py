"""``toolcall-guard check``: lint a saved request body or messages array offline.

``--upstream NAME`` names an upstream of the config (its policy applies), or a policy: a
``[policies.NAME]`` table (its rule overrides apply) or a preset.

Exit status: 0 clean, 1 findings that were repaired (or only warned about), 2 rejected,
3 unreadable input or configuration (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

import orjson

from proxy.core.forward import forwarded_body
from proxy.core.policy import PRESETS, Outcome, Policy, build_policy
from proxy.core.registry import ALL_RULES as RULES
from proxy.core.wire import WIRES, Wire, sanitize_body, wire_of_body
from proxy.errors import AmbiguousBody, ConfigError, MalformedHistory, Unreadable
from proxy.settings import Settings, load_settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_REJECTED, EXIT_UNREADABLE = 0, 1, 2, 3


def _read(source: str) -> Any:
    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise Unreadable(f"cannot read {source}: {exc.strerror}") from exc
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Unreadable(f"{source} is not valid JSON: {exc}") from exc


def _policy(
    settings: Settings, name: str | None, body: dict[str, Any]
) -> tuple[str | None, Policy]:
    """The upstream (None when a policy is named directly) and the policy that applies: the
    named upstream's, the policy named (a ``[policies.X]`` table, overrides included, or a
    preset), or the policy of the upstream routing would pick for the body's model."""
    from proxy.routing import upstream_for_model

    if name is None:
        name = upstream_for_model(settings, body.get("model"))
        if name is None:
            raise Unreadable("no upstream matches; name one with --upstream")
    if name in settings.upstreams:
        return name, settings.policy_for(name)
    if name in settings.policies:
        return None, settings.policy_named(name)
    if name in PRESETS:
        return None, build_policy(name)
    allowed = ", ".join(dict.fromkeys([*settings.upstreams, *settings.policies, *PRESETS]))
    raise Unreadable(f"unknown upstream or policy {name!r}; allowed: {allowed}")


def _print_text(outcome: Outcome, upstream: str | None, policy: Policy, out: TextIO) -> None:
    where = f"upstream {upstream} (policy {policy.name})" if upstream else f"policy {policy.name}"
    print(f"{where}: {outcome.status}", file=out)
    for finding in outcome.findings:
        print(f"  {finding.path}  {finding.rule}  [{finding.action}]  {finding.detail}", file=out)
        print(f"      fix in the client: {RULES[finding.rule].hint}", file=out)


def _exit_code(outcome: Outcome) -> int:
    if outcome.rejected:
        return EXIT_REJECTED
    return EXIT_FINDINGS if outcome.findings else EXIT_CLEAN


def repaired_body(body: dict[str, Any], outcome: Outcome, wire: Wire) -> dict[str, Any]:
    """The body as the proxy would forward it: the one the proxy builds when the outcome
    changed it (request-level fields included), else the body as sent."""
    return forwarded_body(wire, body, outcome) if outcome.changed else body


def _wire(body: Any, wanted: str | None, source: str) -> Wire:
    """The wire API of the body: ``--api`` when given, else recognised by its shape."""
    if wanted is not None and wanted not in WIRES:
        raise Unreadable(f"unknown --api {wanted!r}; allowed: {', '.join(WIRES)}")
    try:
        return wire_of_body(body, wanted)
    except AmbiguousBody as exc:
        raise Unreadable(f"{source}: {exc}") from exc


def check(args: argparse.Namespace, out: TextIO) -> int:
    data = _read(args.file)
    bare = type(data) is list
    wire = _wire({"messages": data} if bare else data, getattr(args, "api", None), args.file)
    body = {wire.history_key: data} if bare else data
    try:
        wire.history(body)  # the structural check first: its error names the item
    except MalformedHistory as exc:
        raise Unreadable(f"{args.file}: {exc}") from exc
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        raise Unreadable(str(exc)) from exc
    request = {**body, "model": args.model} if getattr(args, "model", None) else body
    upstream, policy = _policy(settings, args.upstream, request)
    outcome = sanitize_body(wire, request, policy)
    fixed: Any = outcome.messages if bare else repaired_body(body, outcome, wire)
    if args.format == "json":
        report: dict[str, Any] = {
            "upstream": upstream,
            "policy": policy.name,
            "status": outcome.status,
            "findings": [f.as_dict() for f in outcome.findings],
        }
        if args.fix:
            report["fixed"] = None if outcome.rejected else fixed
        out.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.fix and not outcome.rejected:
        out.write(orjson.dumps(fixed, option=orjson.OPT_INDENT_2).decode() + "\n")
        _print_text(outcome, upstream, policy, sys.stderr)
    else:
        _print_text(outcome, upstream, policy, out)
    return _exit_code(outcome)


def run_check(args: argparse.Namespace) -> int:
    try:
        return check(args, sys.stdout)
    except Unreadable as exc:
        print(f"toolcall-guard check: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
