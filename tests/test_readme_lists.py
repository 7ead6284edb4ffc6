"""The README's lists are the code's (issue 37 item 4): the wire APIs, the built-in upstreams,
the emulated providers, the presets, the dialects, the key variables and the rule names it
quotes are read from the registry, the built-in upstreams and the presets, so a name added to
the code and missing from the README (or the other way round) fails here. A wire API is
demanded once the registry holds its rules (a row without rules is not guarded yet). Paths it
cites exist, written from the repository's root outside the Architecture section's diagrams."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.__main__ import _parser
from proxy.api.units import UNITS
from proxy.config_layers import builtin_upstreams
from proxy.core.policy import DIALECTS, PRESETS
from proxy.core.registry import ALL_RULES, PIPELINES
from proxy.core.wire import WIRES, Wire
from proxy.emulator.app import PREFIXES
from proxy.emulator.messages_errors import MESSAGES_PROVIDERS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
#: The README without its fenced blocks: the prose.
PROSE = re.sub(r"```.*?```", "", README, flags=re.DOTALL)
BUILT_IN = builtin_upstreams()
#: The wire APIs whose rules the registry holds (an API is guarded, so documented, from then).
APIS = {name: WIRES[name] for name in PIPELINES}
#: The setting holding each API's base URL on an upstream.
BASE_KEYS = {unit.name: unit.base_key for unit in UNITS.values()}


def section(title: str) -> str:
    return README.split(f"\n{title}\n", 1)[1].split("\n## ", 1)[0]


def ticked(text: str) -> list[str]:
    """The backticked names of a list: ``a``, ``b`` and ``c``."""
    return re.findall(r"`([\w-]+)`", text)


def squashed(name: str) -> str:
    """A name as prose writes it, reduced to compare: ``MiniMax`` and ``minimax``, ``Code
    Assist`` and ``code-assist``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def sentence(text: str, start: str) -> str:
    """From ``start`` to the end of its sentence."""
    found = re.search(re.escape(start) + r".*?\.(?:\s|$)", text, re.DOTALL)
    assert found, f"no sentence starting {start!r}"
    return found.group(0)


# --- upstreams and providers ------------------------------------------------------------------


def test_the_built_in_upstreams_are_listed() -> None:
    listed = sentence(section("## Upstreams, routing and keys"), "The built-in upstreams (")
    assert ticked(listed.split(", each with", 1)[0]) == list(BUILT_IN)


def test_the_quick_start_names_every_emulated_provider() -> None:
    """The banner lists one emulator per built-in upstream that has one; so does the text."""
    quick = section("## Quick start: offline, no keys")
    listed = sentence(quick, "This starts a strict emulator of each built-in provider (")
    names = listed.split("(", 1)[1].split(")", 1)[0]
    emulated = [name for name in BUILT_IN if name in PREFIXES]
    assert [squashed(n) for n in names.split(",")] == [squashed(n) for n in emulated]


def test_the_introduction_names_every_guarded_upstream() -> None:
    """Every built-in upstream that serves a guarded API (one with rules in the registry)."""
    intro = squashed(README.split("\n\n", 2)[1])
    guarded = [
        name for name, fields in BUILT_IN.items() if any(fields.get(BASE_KEYS[a]) for a in APIS)
    ]
    assert [name for name in guarded if squashed(name) not in intro] == []


def test_every_provider_key_variable_is_named() -> None:
    keys = section("## Set up")
    variables = [f["api_key_env"] for f in BUILT_IN.values() if f.get("api_key_env")]
    assert [v for v in variables if f"`{v}`" not in keys] == []


def test_the_messages_upstreams_and_emulators_are_listed() -> None:
    messages = section("### The Anthropic Messages API (Claude Code, the Anthropic SDKs)")
    built_in = sentence(messages, "Built in: ")
    served = [name for name, fields in BUILT_IN.items() if fields.get("anthropic_base_url")]
    assert {n for n in ticked(built_in) if n in BUILT_IN} == set(served)
    flag = re.search(r"`--provider ([\w|-]+)` also serves the Anthropic Messages API", README)
    assert flag
    assert flag.group(1).split("|") == list(MESSAGES_PROVIDERS)


# --- presets and dialects ---------------------------------------------------------------------


def test_the_presets_are_listed() -> None:
    policies = section("## Policies and rules")
    assert ticked(sentence(policies, "Presets: ")) == list(PRESETS)


def test_the_dialects_are_listed() -> None:
    policies = section("## Policies and rules")
    listed = sentence(policies, "`dialect` names the provider")
    assert ticked(listed.split("one of", 1)[1]) == list(DIALECTS)


# --- wire APIs --------------------------------------------------------------------------------


def test_check_names_every_api() -> None:
    flags = re.findall(r"`--api\s+(\w+(?:\|\w+)+)`", PROSE)
    assert flags
    assert [f.split("|") for f in flags] == [list(APIS)] * len(flags)
    api = next(a for a in _parser()._subparsers._group_actions[0].choices["check"]._actions
               if a.dest == "api")  # fmt: skip
    assert re.findall(r"\b(\w+)(?:,| or | \()", api.help or "")[: len(APIS)] == list(APIS)


def _shown(wire: Wire) -> str:
    """How a person sees the API's path: its own, or (a row whose paths carry their own
    version, Gemini's native API) its checked method."""
    return wire.path if wire.split is None else ":generateContent"


def test_the_help_names_every_api_path() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "proxy", "--help"], capture_output=True, text=True, check=True
    )
    description = " ".join(result.stdout.split())
    assert "OpenAI-compatible providers." not in description
    assert [_shown(w) for w in APIS.values() if _shown(w) not in description] == []


def test_the_architecture_shows_every_api() -> None:
    architecture = section("## Architecture")
    client = next(line for line in architecture.splitlines() if line.startswith("client "))
    assert [_shown(w) for w in APIS.values() if _shown(w) not in client] == []
    rules = " ".join(architecture.split("core/policy.py", 1)[1].split("\n  ─▶", 1)[0].split())
    assert [n for n in APIS if f"core/{n}/rules/" not in rules] == []
    emulator = " ".join(
        architecture.split("  emulator/", 1)[1].split("\n  errors.py", 1)[0].split()
    )
    assert [n for n in APIS if n not in emulator.lower()] == []


# --- rule names and paths ---------------------------------------------------------------------


def test_every_rule_name_the_readme_quotes_exists() -> None:
    quoted = re.findall(r"x-toolcall-guard-(?:rules|retried): ([\w=,]+)", README)
    names = {part.split("=")[0] for q in quoted for part in q.split(",")}
    names |= set(re.findall(r"\(rule (\w+)\)", README))
    names |= set(re.findall(r"`((?:responses|messages)_[a-z_]+)`", README))
    names |= set(re.findall(r"^\| `(\w+)` \|", README, re.MULTILINE))
    assert names
    assert sorted(names - set(ALL_RULES)) == []


@pytest.mark.parametrize("api", list(APIS))
def test_every_api_has_its_rules_in_the_readme(api: str) -> None:
    """Chat and Messages rules are tabled; a rule family the prose names (``responses_*``)."""
    rules = [name for name, rule in ALL_RULES.items() if rule.api == api]
    tabled = [name for name in rules if f"| `{name}` |" in README]
    assert tabled == rules or f"`{rules[0].split('_')[0]}_*`" in PROSE, api


def test_cited_paths_exist_and_are_written_from_the_root() -> None:
    """Outside the Architecture section's diagrams (relative to ``proxy/``), a path is written
    from the repository's root; every cited file exists, and no cited note is missing."""
    paths = set(re.findall(r"`([\w.-]+(?:/[\w.-]+)+/?)`", PROSE))
    paths = {
        p
        for p in paths  # files (with an extension) and folders; not routes, not media types
        if not p.startswith("/") and (p.endswith("/") or "." in p.rsplit("/", 1)[-1])
    }
    assert paths
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []
    notes = set(re.findall(r"[\w/-]+\.md\b", PROSE)) - {"README.md"}
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(n for n in notes if not any(t.endswith(n) for t in tracked)) == []
