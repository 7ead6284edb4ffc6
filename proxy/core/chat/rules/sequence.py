"""Rules about the order and succession of turns: empty turns, where a tool-call turn may
stand, and successive messages of one role.

They run after pairing, on a history whose call blocks are whole, and never split a block.
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message
from proxy.core.chat.rules import views
from proxy.core.chat.rules.blocks import calls_of
from proxy.core.chat.rules.text import is_empty, join_contents
from proxy.core.providers import model_matches, model_of, provider_of
from proxy.core.rule import Hit, Params, rule

Entries = list[tuple[Message, int | None]]

CONTINUE_TEXT = "Continue."
_TURN_SEPARATOR = "\n\n"


def _makes_calls(message: Message) -> bool:
    return bool(message.get("tool_calls")) or message.get("function_call") is not None


def _strict_order(history: History, params: Params) -> bool:
    """Whether the request's model is one whose upstream or template wants strict role order
    (the record's ``alternation_models``; none listed: every model)."""
    globs = provider_of(params).alternation_models
    return not globs or model_matches(model_of(history.request), globs)


def _plain_assistant(message: Message) -> bool:
    return message["role"] == "assistant" and not _makes_calls(message)


# --- empty_assistant_message -------------------------------------------------------------------


@rule(
    hint="Leave out assistant messages that have neither content nor tool_calls.",
)
def empty_assistant_message(history: History, params: Params) -> list[Hit]:
    """An assistant message with no content (missing, null, ``""`` or ``[]``) and no tool calls.

    Left behind by an interrupted or filtered reply. DeepSeek answers ``Invalid assistant
    message: content or tool_calls must be set``; Gemini would get a model turn without parts
    (``contents.parts must not be empty``); Mistral ``Assistant message must have either
    content or tool_calls, but not none.`` (§4), its templates on vLLM too: on template servers
    only the models of the record's ``alternation_models`` are checked. The ``drop`` repair
    removes the message.
    """
    if "assistant" not in views.odd_roles(history) or views.odd_only_on_call_turns(history):
        return []
    if not _strict_order(history, params):
        return []
    messages = history.messages
    empty = [
        i
        for i in _not_calling(history)
        if _plain_assistant(messages[i]) and is_empty(messages[i].get("content"))
    ]
    if len(empty) == len(messages):  # dropping them would leave nothing to send
        detail = "assistant message without content or tool_calls, and nothing else to send"
        return [Hit(i, "", detail, fatal=True) for i in empty]
    return [Hit(i, "", "assistant message without content or tool_calls") for i in empty]


def _not_calling(history: History) -> list[int]:
    """The odd messages, without those sure to make calls: when every caller is an assistant
    message with a non-empty ``tool_calls`` list (a regular history), the callers (the usual
    odd messages of an agent's history: only the few others need a look)."""
    index = history.index
    if not index.regular or index.empty_call_list:
        return index.odd_content
    return sorted(set(index.odd_content).difference(index.callers))


@empty_assistant_message.repair("drop")
def _drop_empty(history: History, hits: Sequence[Hit], params: Params) -> History:
    # Runs between the drops are copied as slices and the index is carried over (splice.py):
    # rebuilt, every later rule and the next pass would analyse the whole history again.
    return history.without({hit.index for hit in hits})


# --- function_call_turn_order ------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Put each assistant 'tool_calls' message right after a user message or tool results: "
    "join the assistant text before it into it, or send a short user turn first.",
    params={"text": CONTINUE_TEXT},
)
def function_call_turn_order(history: History, params: Params) -> list[Hit]:
    """An assistant tool-call turn that does not come right after a user turn or tool results.

    Gemini: ``Please ensure that function call turn comes immediately after a user turn or
    after a function response turn.`` (a model text turn before the call turn, or a history
    that opens with a call after the system prompt). The ``merge`` repair folds the plain
    assistant messages right before the call turn into its content; if still no user or tool
    message precedes it, it inserts a short user turn (``text``) before it.
    """
    if _turns_in_order(history):
        return []
    messages = history.messages
    hits = []
    for c in history.index.callers:
        if calls_of(messages[c]) is None:
            continue
        if c == 0:
            hits.append(Hit(c, "", "the history opens with a tool-call turn"))
        elif messages[c - 1]["role"] not in ("user", "tool"):
            role = messages[c - 1]["role"]
            hits.append(Hit(c, "", f"tool-call turn right after a message of role {role!r}"))
    return hits


def _turns_in_order(history: History) -> bool:
    """Fast path: every caller opens a call block, and right after a user or tool message."""
    index = history.index
    callers = index.callers
    if not callers or not index.regular or index.empty_call_list or callers[0] == 0:
        return not callers
    return fast.only(fast.roles_before(history.messages, callers), ("user", "tool"))


@function_call_turn_order.repair("merge")
def _merge_turn(history: History, hits: Sequence[Hit], params: Params) -> History:
    messages = history.messages
    user: Message = {"role": "user", "content": params.get("text", CONTINUE_TEXT)}
    skip: set[int] = set()
    changes: dict[int, Message] = {}
    before: set[int] = set()  # positions that get the short user turn in front of them
    for hit in hits:
        c = start = hit.index
        while start > 0 and _plain_assistant(messages[start - 1]):
            start -= 1
        if start < c:
            content = None
            for k in range(start, c + 1):
                content = join_contents(content, messages[k].get("content"), _TURN_SEPARATOR)
            if content is not None or "content" in messages[c]:
                changes[c] = {**messages[c], "content": content}
            skip.update(range(start, c))
        if start == 0 or messages[start - 1]["role"] not in ("user", "tool"):
            before.add(start)
    entries: Entries = []
    for i, message in enumerate(messages):
        if i in before:
            entries.append((user, None))
        if i not in skip:
            entries.append((changes.get(i, message), i))
    return history.rebuild(entries)


# --- consecutive_same_role ---------------------------------------------------------------------


def _kind(message: Message) -> str | None:
    """``user`` or ``assistant`` (plain, without calls) for mergeable messages, else None."""
    if message["role"] == "user":
        return "user"
    return "assistant" if _plain_assistant(message) else None


@rule(
    hint="Alternate user and assistant messages; join successive ones into one.",
    params={"separator": _TURN_SEPARATOR},
)
def consecutive_same_role(history: History, params: Params) -> list[Hit]:
    """Successive user messages, or successive plain assistant messages (without tool calls).

    Left when a client drops an interrupted reply (Cherry Studio PR#5051). DeepSeek R1:
    ``deepseek-reasoner does not support successive user or assistant messages (messages[1]
    and messages[2] in your input).``; strict chat templates (llama.cpp, Mistral) demand
    alternation (``After the optional system message, conversation roles must alternate user
    and assistant roles except for tool calls and results.``, B1). On template servers only
    the models of the record's ``alternation_models`` (the Mistral family) are checked. The
    ``merge`` repair joins each run into its first message: strings joined with ``separator``,
    parts lists concatenated (a string becomes a text part); the first message's other fields
    are kept.
    """
    if not _strict_order(history, params):
        return []
    messages = history.messages
    hits = []
    previous = None
    for i, message in enumerate(messages):
        kind = _kind(message)
        if kind is not None and kind == previous:
            hits.append(Hit(i, "", f"a second {kind} message in a row"))
        previous = kind
    return hits


@consecutive_same_role.repair("merge")
def _merge_same_role(history: History, hits: Sequence[Hit], params: Params) -> History:
    separator = str(params.get("separator", _TURN_SEPARATOR))
    merged = {hit.index for hit in hits}
    entries: Entries = []
    for i, message in enumerate(history.messages):
        if i in merged:
            first, origin = entries[-1]
            content = join_contents(first.get("content"), message.get("content"), separator)
            entries[-1] = ({**first, "content": content}, origin)
        else:
            entries.append((message, i))
    return history.rebuild(entries)


# --- user_after_tool ---------------------------------------------------------------------------

BRIDGE_TEXT = "Tool results received."


@rule(
    hint="Put an assistant message between tool results and the next user message.",
    params={"text": BRIDGE_TEXT},
)
def user_after_tool(history: History, params: Params) -> list[Hit]:
    """A user (or system) message right after tool results, where the upstream wants an
    assistant turn between them.

    Left when a user cancels a tool run or answers before the model does (Mistral Vibe#578,
    datapizza#98). Mistral: ``Unexpected role 'user' after role 'tool'`` (400, code 3230,
    §4; ``'system' after 'tool'`` likewise); Mistral templates on vLLM and llama.cpp fail the
    same way (B1). On template servers only the models of the record's ``alternation_models``
    are checked. The ``bridge`` repair inserts an assistant message saying ``text`` between
    them; a system message there becomes a user message with the same content, since these
    upstreams refuse ``'system' after 'assistant'`` as well (a note a client inserted among tool
    results, gptme#3421: only the opening system messages may stay system).
    """
    index = history.index
    if not index.tools or not _strict_order(history, params):
        return []
    messages = history.messages
    return [
        Hit(i, ".role", f"{messages[i]['role']} message right after a tool message")
        for i in range(1, len(messages))
        if messages[i]["role"] in ("user", "system") and messages[i - 1]["role"] == "tool"
    ]


@user_after_tool.repair("bridge")
def _bridge(history: History, hits: Sequence[Hit], params: Params) -> History:
    bridge: Message = {"role": "assistant", "content": str(params.get("text") or BRIDGE_TEXT)}
    before = {hit.index for hit in hits}
    entries: Entries = []
    for i, message in enumerate(history.messages):
        if i in before:
            entries.append((bridge, None))
        entries.append((_as_user(message) if i in before else message, i))
    return history.rebuild(entries)


def _as_user(message: Message) -> Message:
    """A system message after tool results as a user message (the same content)."""
    return {**message, "role": "user"} if message["role"] == "system" else message


RULES = (empty_assistant_message, function_call_turn_order, consecutive_same_role, user_after_tool)
