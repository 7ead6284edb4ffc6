"""Rules about how many tool calls a message may make and what their ids may look like.

The limits are the upstream's record (OpenAI: 128 calls, O8; ids of at most 40 characters, O10;
Mistral: ids of exactly 9 letters and digits, §4); the parameters override them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message, call_id, tool_calls_of
from proxy.core.chat.rules import views
from proxy.core.providers import model_matches, model_of, provider_of
from proxy.core.rule import BadParam, Hit, Params, rule


@rule(
    tools_only=True,
    hint="Send at most as many tool calls in one assistant message as the upstream takes (OpenAI: "
    "128); split bigger steps into successive assistant messages.",
    params={"max_calls": 0},
)
def too_many_tool_calls(history: History, params: Params) -> list[Hit]:
    """An assistant message with more tool calls than the upstream takes.

    The limit is ``max_calls`` when set (0: the upstream record's; none known: no limit).
    OpenAI (O8) answers ``Invalid 'messages[3].tool_calls': array too long. Expected an array
    with maximum length 128, but got an array with length 200 instead.`` The ``split`` repair
    cuts the calls into consecutive assistant messages of at most ``max_calls`` calls, each
    followed by its own results (moved out of the original tool block). The text stays on the
    first message; the later ones get the content the upstream takes on a tool-call turn
    (null on OpenAI).

    Never split where the record forbids it (Gemini: results may not be interleaved with
    parallel calls, "FC1 + signature, FR1, FC2, FR2" is a 400, G4): there the hits are fatal
    (warned or rejected, never split).
    """
    limit = _max_calls(params)
    if not limit:
        return []
    try:
        if fast.longest(history.index.call_lists) <= limit:
            return []
    except TypeError:
        pass
    fatal = not provider_of(params).split_calls
    messages = history.messages
    hits = []
    for i in history.index.callers:
        count = len(tool_calls_of(messages[i]))
        if count > limit and messages[i]["role"] == "assistant":
            detail = f"{count} tool calls in one message; the upstream takes at most {limit}"
            hits.append(Hit(i, ".tool_calls", detail, fatal=fatal))
    return hits


def _max_calls(params: Params) -> int:
    """The limit in force: the parameter, else the record's (0: none)."""
    limit = int(params.get("max_calls") or 0) or provider_of(params).max_calls
    return max(1, limit) if limit else 0


@too_many_tool_calls.repair("split")
def _split_calls(history: History, hits: Sequence[Hit], params: Params) -> History:
    targets = {h.index for h in hits if not h.fatal}
    if not targets:
        return history
    limit = _max_calls(params)
    keep, later_content = provider_of(params).new_call_content()
    messages = history.messages
    entries: list[tuple[Message, int | None]] = []
    end = 0  # messages before ``end`` are placed already
    for i in sorted(targets):
        entries.extend((messages[j], j) for j in range(end, i))
        end = i + 1
        while end < len(messages) and messages[end]["role"] == "tool":
            end += 1
        entries.extend(_split_block(messages, i, end, limit, (keep, later_content)))
    entries.extend((messages[j], j) for j in range(end, len(messages)))
    return history.rebuild(entries)


def _split_block(
    messages: list[Message], i: int, end: int, limit: int, content: tuple[bool, str | None]
) -> list[tuple[Message, int | None]]:
    """The assistant message ``i`` and its tool block ``i+1..end`` as blocks of ``limit`` calls."""
    message = messages[i]
    calls = message["tool_calls"]
    chunks = [calls[k : k + limit] for k in range(0, len(calls), limit)]
    home: dict[str, int] = {}
    for number, chunk in enumerate(chunks):
        for call in chunk:
            cid = call_id(call)
            if cid is not None:
                home.setdefault(cid, number)
    results: list[list[tuple[Message, int | None]]] = [[] for _ in chunks]
    for j in range(i + 1, end):
        answers = messages[j].get("tool_call_id")
        number = home.get(answers, len(chunks) - 1) if type(answers) is str else len(chunks) - 1
        results[number].append((messages[j], j))  # unmatched results stay at the block's end
    entries: list[tuple[Message, int | None]] = [({**message, "tool_calls": chunks[0]}, i)]
    entries.extend(results[0])
    for chunk, block in zip(chunks[1:], results[1:], strict=True):
        later: Message = {"role": "assistant", "content": content[1], "tool_calls": chunk}
        if not content[0]:
            del later["content"]
        if "reasoning_content" in message:
            later["reasoning_content"] = ""  # the reasoning belongs to the first block
        entries.append((later, None))
        entries.extend(block)
    return entries


def _check_pattern(params: Params) -> None:
    pattern = str(params.get("pattern") or "") or provider_of(params).id_pattern
    try:
        _compiled(pattern)
    except re.error as exc:
        raise BadParam("pattern", f"invalid regular expression {pattern!r}: {exc}") from exc


@rule(
    tools_only=True,
    hint="Use tool call ids of at most 40 characters (or the upstream's id pattern).",
    params={"max_length": 0, "pattern": ""},
    check_params=_check_pattern,
)
def tool_call_id_format(history: History, params: Params) -> list[Hit]:
    """A tool call id the upstream's id format refuses (and the ``tool_call_id`` of its results).

    OpenAI (O10): ``Invalid 'messages[36].tool_calls[0].id': string too long. Expected a string
    with maximum length 40, but got a string with length 51 instead.`` (ids minted by another
    provider or gateway). ``max_length`` and ``pattern`` (matched against the whole id) default
    to the upstream record's (0 and empty: the record's; none known: any id): Mistral wants 9
    letters and digits (``Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of
    9.``, §4), and so do Mistral-family models on template servers (vLLM, Ollama: ``Unexpected
    tool call id … in tool results``, B1), the only models checked there. The ``remap`` repair
    derives a new id from the old one with a hash, so a call and its results get the same new id
    wherever they are in the history and the same history always gets the same ids. An id no
    derived form can fit is a fatal hit.
    """
    if not _id_format(params)[0] or not _applies(history, params):
        return []
    if _all_ids_fit(history, params):
        return []
    fits = _id_check(params)
    messages = history.messages
    hits = []
    bad = set()
    for i in history.index.callers:
        if messages[i]["role"] == "assistant":
            for k, old in _call_ids(messages[i]):
                if not fits(old):
                    hits.append(_id_hit(i, f".tool_calls[{k}].id", old, params))
                    bad.add(old)
    for i in history.index.tools if bad else ():
        answers = messages[i].get("tool_call_id")
        if type(answers) is str and answers in bad:
            hits.append(_id_hit(i, ".tool_call_id", answers, params))
    hits.sort(key=lambda h: h.index)
    return hits


def _all_ids_fit(history: History, params: Params) -> bool:
    """Fast path: every call id fits (a result whose id no call has is pairing's business)."""
    facts = views.call_facts(history)
    ids = facts.ids if facts is not None else views.call_ids(history)
    if ids is None:
        return False
    max_length, pattern, _ = _id_format(params)
    try:
        if fast.longest(ids) > max_length:
            return False
        return pattern is None or fast.all_match(pattern, ids)
    except TypeError:  # an id that is no string: the exact scan skips it
        return False


def _call_ids(message: Message) -> Iterator[tuple[int, str]]:
    for k, call in enumerate(tool_calls_of(message)):
        old = call_id(call)
        if old is not None:
            yield k, old


def _id_hit(i: int, where: str, old: str, params: Params) -> Hit:
    fatal = _new_id(old, 0, params) is None
    detail = f"tool call id {old[:60]!r} ({len(old)} chars) does not fit the upstream's format"
    return Hit(i, where, detail, data=old, fatal=fatal)


@lru_cache(maxsize=32)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    return re.compile(pattern) if pattern else None


def _id_format(params: Params) -> tuple[int, re.Pattern[str] | None, str]:
    """``(max length, compiled pattern, pattern)`` in force: the parameters, else the record's.

    A record with a pattern and no length gets a length of 64 (no derived id is longer).
    """
    provider = provider_of(params)
    pattern = str(params.get("pattern") or "") or provider.id_pattern
    max_length = int(params.get("max_length") or 0) or provider.id_max_length
    if pattern and not max_length:
        max_length = 64
    return max_length, _compiled(pattern), pattern


def _applies(history: History, params: Params) -> bool:
    """Whether the record's id format covers the request's model (no globs: every model)."""
    globs = provider_of(params).id_models
    return not globs or model_matches(model_of(history.request), globs)


def _id_check(params: Params) -> Callable[[str], bool]:
    max_length, pattern, _ = _id_format(params)
    if pattern is None:
        return lambda value: len(value) <= max_length
    return lambda value: len(value) <= max_length and pattern.fullmatch(value) is not None


_HEX_TO_LETTERS = str.maketrans("0123456789", "ghijklmnop")


def _new_id(old: str, salt: int, params: Params) -> str | None:
    """The first derived form of ``old`` that fits: ``call_<hex>``, then bare hex or letters."""
    digest = hashlib.blake2b(f"{salt}:{old}".encode(), digest_size=16).hexdigest()
    letters = digest.translate(_HEX_TO_LETTERS)  # for patterns that want no digits
    longest = min(len(digest), _id_format(params)[0])
    short = (form[:size] for size in range(longest, 0, -1) for form in (digest, letters))
    prefixed = (f"call_{digest[:24]}", f"call_{digest[: max(longest - 5, 8)]}")
    fits = _id_check(params)
    for candidate in (*prefixed, *short):
        if fits(candidate):
            return candidate
    return None


@tool_call_id_format.repair("remap")
def _remap_ids(history: History, hits: Sequence[Hit], params: Params) -> History:
    fits = _id_check(params)
    taken = {old for m in history.messages for _, old in _call_ids(m) if fits(old)}
    taken |= {t for m in history.messages if type(t := m.get("tool_call_id")) is str and fits(t)}
    mapping: dict[str, str] = {}
    for hit in hits:
        if not hit.fatal and hit.data not in mapping:
            mapping[hit.data] = _free_id(hit.data, taken, params)
    changes = {}
    for i in sorted({h.index for h in hits if not h.fatal}):
        changes[i] = _with_ids(history.messages[i], mapping)
    return history.replace(changes)


def _free_id(old: str, taken: set[str], params: Params) -> str:
    """``old``'s derived id, salted until it collides with no id the history keeps."""
    for salt in range(1000):
        new = _new_id(old, salt, params)
        if new is not None and new not in taken:
            taken.add(new)
            return new
    return _new_id(old, 0, params) or old  # only an absurdly short max_length gets here


def _with_ids(message: Message, mapping: dict[str, str]) -> Message:
    if message["role"] == "tool":
        return {**message, "tool_call_id": mapping[message["tool_call_id"]]}
    calls = [
        {**call, "id": mapping[old]} if (old := call_id(call)) in mapping else call
        for call in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


RULES = (too_many_tool_calls, tool_call_id_format)
