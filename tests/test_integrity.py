"""Integrity as a property (issue 22 item 4): every preset's repair of a broken history is
accepted by its provider's emulator and keeps what the client said and what its tools returned.

For every provider preset: a valid history that preset's emulator accepts (ids as that
provider mints them: Mistral's 9 characters, Kimi's ``name:N`` that repeat across turns), broken
by one to three of the ways agents break histories (drop ``tool_calls``, drop or duplicate a
result, reorder a block's results, repeat an id across turns, empty a content, cut a chain in
the middle, lose an id). The preset's repair must then

1. be accepted by that preset's emulator (``validate``);
2. keep every user text and every tool output (somewhere in the forwarded contents);
3. pair every forwarded result with the same call (name and arguments) it answered in the
   received history: the latest call with its id before it (ids repeat across turns).

Every tool output and every call's arguments are unique, so a forwarded result is traced back
to the received one by its content. Derandomized and bounded: the same examples on every run.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxy.core.forward import forwarded_body
from proxy.core.policy import DIALECTS, build_policy
from proxy.core.wire import CHAT
from proxy.emulator import validate
from tests.factories import sanitize_chat

Message = dict[str, Any]
Mutation = Callable[[list[Message], int], None]

#: The strictest model of each preset (thinking, signatures, Mistral-family templates).
MODELS = {
    "openai": "gpt-4o",
    "deepseek": "deepseek-reasoner",
    "gemini": "gemini-3-pro-preview",
    "kimi": "kimi-k2.5",
    "mistral": "mistral-large-latest",
    "groq": "openai/gpt-oss-120b",
    "xai": "grok-4",
    "qwen": "qwen3-coder-plus",
    "vllm": "mistralai/Devstral-Small-2507",
    "ollama": "mistral-small3.1:24b",
    "anthropic": "claude-opus-5",
    "glm": "glm-4.6",
    "minimax": "MiniMax-M2",
    "vertex": "gemini-3-pro-preview",
    "code-assist": "gemini-3-pro-preview",
}
#: Presets whose chat is another preset's emulator's (Gemini's models on Google Cloud).
SAME_CHAT = {"vertex": "gemini", "code-assist": "gemini"}
#: Presets whose ids are 9 letters and digits (Mistral's rule, in its templates too).
NINE = ("mistral", "vllm")
#: Presets whose ids are Kimi's ``name:N``, repeated across turns.
NAME_N = ("kimi",)
SIGNATURE = {"google": {"thought_signature": "skip_thought_signature_validator"}}
PROPERTY = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
POLICIES = {preset: build_policy(preset) for preset in DIALECTS}

words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=12).filter(str.strip)
tool_names = st.sampled_from(["read_file", "write_file", "search"])


# --- valid histories, per preset --------------------------------------------------------------


@st.composite
def valid_histories(draw: st.DrawFn, preset: str) -> list[Message]:
    """A history ``preset``'s emulator accepts: unique tool outputs and call arguments."""
    preset = SAME_CHAT.get(preset, preset)
    counter = iter(range(10_000))
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": f"sys {draw(words)}"})
    turns = draw(st.integers(1, 3))
    for turn in range(turns):
        messages.append({"role": "user", "content": f"user{next(counter)} {draw(words)}"})
        for _ in range(draw(st.integers(0, 2))):
            calls = [_call(draw(tool_names), next(counter)) for _ in range(draw(st.integers(1, 3)))]
            messages.append({"role": "assistant", "content": draw(words), "tool_calls": calls})
            messages.extend(
                {"role": "tool", "tool_call_id": c["id"], "content": f"out{next(counter)}"}
                for c in calls
            )
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": draw(words)})
    _name_ids(messages, preset)
    _dress(messages, preset)
    return messages


def _call(name: str, n: int) -> dict[str, Any]:
    arguments = json.dumps({"path": f"f{n}.txt"})
    function = {"name": name, "arguments": arguments}
    return {"id": f"call_{n}", "type": "function", "function": function}


def _name_ids(messages: list[Message], preset: str) -> None:
    """Ids as ``preset``'s provider mints them (Kimi's repeat across turns)."""
    mapping: dict[str, str] = {}
    for message in messages:
        for k, call in enumerate(message.get("tool_calls", ())):
            old = call["id"]
            if preset in NINE:
                new = (old.replace("_", "") + "xxxxxxxxx")[:9]
            elif preset in NAME_N:
                new = f"{call['function']['name']}:{k}"
            else:
                new = old
            mapping[old] = call["id"] = new
        if message["role"] == "tool":
            message["tool_call_id"] = mapping[message["tool_call_id"]]


def _dress(messages: list[Message], preset: str) -> None:
    """What the strictest model of ``preset`` needs on a valid history."""
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", ())}
    for message in messages:
        if preset in ("deepseek", "kimi") and "tool_calls" in message:
            message["reasoning_content"] = ""
        if preset in ("gemini", "groq") and message["role"] == "tool":
            message["name"] = names[message["tool_call_id"]]
        if preset == "gemini" and "tool_calls" in message:
            message["tool_calls"][0]["extra_content"] = copy.deepcopy(SIGNATURE)


# --- mutations: each takes a valid history and a drawn number --------------------------------


def _pick(messages: list[Message], wanted: Callable[[Message], bool], n: int) -> int | None:
    found = [i for i, m in enumerate(messages) if wanted(m)]
    return found[n % len(found)] if found else None


def _is_call(message: Message) -> bool:
    return bool(message.get("tool_calls"))


def _is_result(message: Message) -> bool:
    return message["role"] == "tool"


def drop_tool_calls(m: list[Message], n: int) -> None:
    if (i := _pick(m, _is_call, n)) is not None:
        del m[i]["tool_calls"]


def drop_result(m: list[Message], n: int) -> None:
    if (i := _pick(m, _is_result, n)) is not None:
        del m[i]


def duplicate_result(m: list[Message], n: int) -> None:
    if (i := _pick(m, _is_result, n)) is not None:
        m.insert(i + 1, copy.deepcopy(m[i]))


def reorder_results(m: list[Message], n: int) -> None:
    if (i := _pick(m, _is_call, n)) is not None:
        end = i + 1
        while end < len(m) and m[end]["role"] == "tool":
            end += 1
        m[i + 1 : end] = reversed(m[i + 1 : end])


def repeat_id(m: list[Message], n: int) -> None:
    """A later turn's call takes an earlier turn's id (Kimi's ``search_web:0``, Mistral's)."""
    callers = [i for i, x in enumerate(m) if _is_call(x)]
    if len(callers) < 2:
        return
    first, later = callers[n % (len(callers) - 1)], callers[-1]
    old, new = m[later]["tool_calls"][0].get("id"), m[first]["tool_calls"][0].get("id")
    if not new or any(c.get("id") == new for c in m[later]["tool_calls"]):
        return
    m[later]["tool_calls"][0]["id"] = new
    for message in m[later + 1 :]:
        if message["role"] == "tool" and message.get("tool_call_id") == old:
            message["tool_call_id"] = new
            break


def empty_content(m: list[Message], n: int) -> None:
    m[n % len(m)]["content"] = "" if n % 2 else None


def cut_chain(m: list[Message], n: int) -> None:
    """Messages cut out from inside a call block on (compaction, a bad trim)."""
    if (i := _pick(m, _is_call, n)) is not None and i + 2 <= len(m):
        del m[i + 1 + n % 2 : i + 2 + n % 3]


def lose_id(m: list[Message], n: int) -> None:
    """A call or a result that lost its id (``""``, null or the key gone)."""
    if n % 2 and (i := _pick(m, _is_call, n)) is not None:
        call = m[i]["tool_calls"][n % len(m[i]["tool_calls"])]
        call.pop("id", None) if n % 4 == 1 else call.update(id="")
    elif (i := _pick(m, _is_result, n)) is not None:
        m[i].pop("tool_call_id", None) if n % 4 == 0 else m[i].update(tool_call_id="")


MUTATIONS: tuple[Mutation, ...] = (
    drop_tool_calls,
    drop_result,
    duplicate_result,
    reorder_results,
    repeat_id,
    empty_content,
    cut_chain,
    lose_id,
)


# --- what must hold ----------------------------------------------------------------------------


def _received_pairs(messages: list[Message]) -> dict[str, tuple[Any, Any]]:
    """Each received tool output -> the call (name, arguments) it answered: the latest call
    with its id before it (none: it answered nothing the history still holds)."""
    pairs: dict[str, tuple[Any, Any]] = {}
    calls: dict[str, tuple[Any, Any]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                calls[call["id"]] = _signature(call)
        if message["role"] == "tool" and message.get("tool_call_id") in calls:
            pairs.setdefault(_text(message), calls[message["tool_call_id"]])
    return pairs


def _forwarded_pairs(messages: list[Message]) -> list[tuple[str, tuple[Any, Any]]]:
    """Each forwarded tool output and the call of its block it answers."""
    pairs = []
    block: dict[str, tuple[Any, Any]] = {}
    for message in messages:
        if message["role"] == "tool":
            pairs.append((_text(message), block[message["tool_call_id"]]))
        elif message["role"] == "assistant":
            block = {c["id"]: _signature(c) for c in message.get("tool_calls") or ()}
    return pairs


def _signature(call: dict[str, Any]) -> tuple[Any, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if type(arguments) is str:
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return function.get("name"), arguments


def _text(message: Message) -> str:
    content = message.get("content")
    return content if type(content) is str else orjson.dumps(content).decode()


def _said(messages: list[Message]) -> list[str]:
    """The user texts and tool outputs of a history (non-empty strings)."""
    return [
        m["content"]
        for m in messages
        if m["role"] in ("user", "tool") and type(m.get("content")) is str and m["content"]
    ]


def check(preset: str, received: list[Message]) -> str | None:
    """Why ``preset``'s repair of ``received`` breaks integrity, or None."""
    request = {"model": MODELS.get(preset, ""), "messages": received}
    outcome = sanitize_chat(received, POLICIES[preset], request=request)
    if outcome.rejected:
        return f"rejected: {[f.as_dict() for f in outcome.findings]}"
    forwarded = outcome.messages
    rejection = validate(SAME_CHAT.get(preset, preset), forwarded_body(CHAT, request, outcome))
    if rejection is not None:
        return f"emulator refused: {rejection.rule} {rejection.message}"
    everything = orjson.dumps([m.get("content") for m in forwarded]).decode()
    lost = [text for text in _said(received) if json.dumps(text)[1:-1] not in everything]
    if lost:
        return f"lost: {lost}"
    answered = _received_pairs(received)
    unique = {text for text, n in Counter(map(_text, received)).items() if n == 1 and text}
    for output, call in _forwarded_pairs(forwarded):
        if output in unique and output in answered and answered[output] != call:
            return f"{output!r} answered {answered[output]}, forwarded with {call}"
    return None


def test_every_preset_is_checked() -> None:
    assert set(DIALECTS) <= set(MODELS), "a preset without a model to check its repair with"


@pytest.mark.parametrize("preset", DIALECTS)
@PROPERTY
@given(data=st.data())
def test_every_presets_repair_keeps_integrity(preset: str, data: st.DataObject) -> None:
    valid = data.draw(valid_histories(preset))
    request = {"model": MODELS[preset], "messages": valid}
    assume(validate(SAME_CHAT.get(preset, preset), request) is None)
    broken = copy.deepcopy(valid)
    for mutation in data.draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        mutation(broken, data.draw(st.integers(0, 50)))
    if not broken or broken[-1]["role"] == "assistant":  # a request ends with a user turn
        broken.append({"role": "user", "content": "user next"})  # or tool results
    snapshot = copy.deepcopy(broken)
    problem = check(preset, broken)
    assert broken == snapshot, "the engine mutated its input"
    assert problem is None, (problem, broken)


def test_the_valid_histories_are_valid() -> None:
    """The generator's histories are accepted as they are (else the property checks nothing)."""

    @settings(max_examples=10, deadline=None, derandomize=True)
    @given(data=st.data())
    def accepted(data: st.DataObject) -> None:
        for preset, model in MODELS.items():
            valid = data.draw(valid_histories(preset))
            chat = SAME_CHAT.get(preset, preset)
            rejection = validate(chat, {"model": model, "messages": valid})
            assert rejection is None, (preset, rejection.rule, rejection.message)

    accepted()
