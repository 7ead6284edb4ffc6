"""Rules about the request around the messages: fields an upstream refuses in combination.

Their hits name the request itself (index ``-1``: the finding's path is the field's name), and
their repairs return the history with a changed :attr:`~proxy.core.history.CopyOnWrite.request`
(the engine forwards that request, with the repaired messages, in place of the one received).
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.chat.messages import History
from proxy.core.providers import provider_of
from proxy.core.rule import Hit, Params, rule

#: The index of a hit on the request itself.
REQUEST = -1


@rule(
    hint="Send 'tool_choice' only together with 'tools'.",
)
def tool_choice_without_tools(history: History, params: Params) -> list[Hit]:
    """A ``tool_choice`` in a request without ``tools``, where the upstream refuses that.

    Left by a client that clears its tools for one turn but keeps its tool settings (livekit
    agents#3114). xAI (providers-second-tier.md B1): ``Invalid request content: A tool_choice
    was set on the request but no tools were specified.`` Only upstreams whose record says so
    (``tool_choice_needs_tools``) have hits. The ``drop`` repair removes ``tool_choice`` (with
    no tools there is nothing to choose from).
    """
    request = history.request
    if request.get("tool_choice") is None or request.get("tools"):
        return []
    if not provider_of(params).tool_choice_needs_tools:
        return []
    return [Hit(REQUEST, ".tool_choice", "tool_choice set, but no tools")]


@tool_choice_without_tools.repair("drop")
def _drop_tool_choice(history: History, hits: Sequence[Hit], params: Params) -> History:
    request = {k: v for k, v in history.request.items() if k != "tool_choice"}
    return History(history.messages, history.origins, request)


RULES = (tool_choice_without_tools,)
