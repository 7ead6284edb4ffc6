"""Rules pairing client-executed calls with their outputs (see :mod:`.common` for the terms).

They run in this order, each on the output of the one before: outputs sent before their call
are moved after it, outputs of no call are salvaged, and calls left without an output are
answered. After the three, every output follows its call and every call has an output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from proxy.core.responses.items import Item, Items, call_key, is_model_item, kind
from proxy.core.responses.rules.common import Entries, block_end, insert_before, pairing, rule
from proxy.core.rule import Hit, Params


@rule(
    tools_only=True,
    hint="Send each call's output after the call, never before it.",
)
def responses_misplaced_output(history: Items, params: Params) -> list[Hit]:
    """An output sent before the call it answers.

    The Responses API scans ``input`` in order, so an output ahead of its call (histories
    re-sorted by timestamp, outputs stored before the call they answer) fails with ``No tool
    call found for function call output with call_id …`` (responses-api.md R2; the codex
    fork's ``repair_call_output_pairs`` moves them). The ``move`` repair moves the output after
    its call and the rest of that call's response.
    """
    found = pairing(history).misplaced
    return [
        Hit(o, "", f"output comes before its call in {history.path(c)}", data=c)
        for o, c in sorted(found.items())
    ]


@responses_misplaced_output.repair("move")
def _move(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    inserts: dict[int, Entries] = {}
    for hit in sorted(hits, key=lambda h: (h.data, h.index)):
        end = block_end(history.messages, hit.data)
        inserts.setdefault(end, []).append((history.messages[hit.index], hit.index))
    return insert_before(history, inserts, {hit.index for hit in hits})


SALVAGE_TEXT = "[toolcall-guard] Output of call {id}, whose call is missing from the input:"


@rule(
    tools_only=True,
    params={"text": SALVAGE_TEXT},
    hint="Keep every call item in 'input' while its output is there (or use previous_response_id).",
)
def responses_orphan_output(history: Items, params: Params) -> list[Hit]:
    """An output whose call is nowhere in ``input``.

    Histories trimmed between a call and its output, or calls lost on save, end in ``No tool
    call found for function call output with call_id call_…`` (responses-api.md R2; continue
    #10092 and 15 duplicates, cline#9288). Exempt: every output when ``previous_response_id``
    is set (its call may live in the stored response, OmniRoute PR#9228) and server-run
    ``tool_search_output`` items (codex ``remove_orphan_outputs``). The ``salvage`` repair turns
    the output into a user message that keeps its text (and images and files) and names the
    call id; ``drop`` drops it.
    """
    if history.request.get("previous_response_id") is not None:
        return []
    return [
        Hit(o, "", f"no call with call_id {call_key(history.messages[o])!r} in the input")
        for o in pairing(history).unbound
    ]


@responses_orphan_output.repair("salvage")
def _salvage(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    changes = {h.index: salvaged(history.messages[h.index], params["text"]) for h in hits}
    return history.replace(changes)


@responses_orphan_output.repair("drop")
def _drop_output(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.without({hit.index for hit in hits})


def salvaged(item: Item, template: str, name: str | None = None) -> Item:
    """A user message holding what the output said, after a line naming its call (``name``:
    how to name it, its call_id by default)."""
    header = template.replace("{id}", name if name is not None else str(call_key(item)))
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": header}]
    output = item.get("output")
    if type(output) is str:
        parts.append({"type": "input_text", "text": output})
    elif type(output) is list and all(_part_ok(p) for p in output):
        parts.extend(_as_input(p) for p in output)
    elif output is not None:
        parts.append({"type": "input_text", "text": json.dumps(output, sort_keys=True)})
    return {"type": "message", "role": "user", "content": parts}


_INPUT_PARTS = ("input_text", "input_image", "input_file")


def _part_ok(part: Any) -> bool:
    if type(part) is not dict:
        return False
    if part.get("type") == "output_text":
        return type(part.get("text")) is str
    return part.get("type") in _INPUT_PARTS


def _as_input(part: dict[str, Any]) -> dict[str, Any]:
    if part["type"] == "output_text":
        return {"type": "input_text", "text": part["text"]}
    return part


MISSING_TEXT = "aborted"


@rule(
    tools_only=True,
    params={"text": MISSING_TEXT},
    hint="Send an output item for every call before the next request (or drop the call).",
)
def responses_missing_output(history: Items, params: Params) -> list[Hit]:
    """A client-executed call with no output anywhere after it.

    Interrupted tool runs, a crash between the call and its output, or one of several parallel
    calls never executed: OpenAI answers ``No tool output found for function call call_….``
    (responses-api.md R1; codex#93, #620, Roo-Code#12248), where Chat Completions accepted a
    trailing unanswered call (R18). The ``synthesize`` repair adds an output of the matching
    type after the call's response, with the fixed ``text`` (``aborted``, as codex's
    ``ensure_call_outputs_present`` writes); a ``computer_call`` or ``program``, whose output
    cannot be made up, is dropped instead. ``drop_call`` drops the call, with the reasoning in
    front of it when nothing else that reasoning produced stays (the agents SDK's
    ``drop_orphan_function_calls``).
    """
    return [
        Hit(c, "", f"{kind(history.messages[c])} {call_key(history.messages[c])!r} has no output")
        for c in pairing(history).open
    ]


@responses_missing_output.repair("synthesize")
def _synthesize(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    inserts: dict[int, Entries] = {}
    cannot: list[int] = []
    for hit in hits:
        output = synthetic_output(history.messages[hit.index], params["text"])
        if output is None:
            cannot.append(hit.index)
        else:
            end = block_end(history.messages, hit.index)
            inserts.setdefault(end, []).append((output, None))
    return insert_before(history, inserts, _drop_set(history.messages, cannot))


def synthetic_output(call: Item, text: str) -> Item | None:
    """The output answering ``call`` with ``text``; None when its type cannot carry text."""
    key = call_key(call)
    k = kind(call)
    if k in ("function_call", "local_shell_call"):  # codex answers local_shell this way
        return {"type": "function_call_output", "call_id": key, "output": text}
    if k == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": key, "output": text}
    if k == "apply_patch_call":
        return {
            "type": "apply_patch_call_output",
            "call_id": key,
            "status": "failed",
            "output": text,
        }
    if k == "shell_call":
        result = {"stdout": "", "stderr": text, "outcome": {"type": "exit", "exit_code": 1}}
        return {"type": "shell_call_output", "call_id": key, "output": [result]}
    if k == "tool_search_call":
        return {"type": "tool_search_output", "call_id": key, "execution": "client", "tools": []}
    return None


@responses_missing_output.repair("drop_call")
def _drop_call(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.without(_drop_set(history.messages, [hit.index for hit in hits]))


def _drop_set(items: list[Item], calls: list[int]) -> set[int]:
    """The ``calls``, plus the reasoning in front of each that produced nothing else kept."""
    drop = set(calls)
    for c in calls:
        front, r = [], c - 1
        while r >= 0 and (r in drop or kind(items[r]) == "reasoning"):
            front.append(r)
            r -= 1
        after = next((j for j in range(c + 1, len(items)) if j not in drop), len(items))
        if after == len(items) or not produced(items[after]):
            drop.update(front)
    return drop


def produced(item: Item) -> bool:
    """Whether the item may be what a reasoning item in front of it produced (R3)."""
    return is_model_item(item) and kind(item) != "reasoning"


RULES = (responses_misplaced_output, responses_orphan_output, responses_missing_output)
