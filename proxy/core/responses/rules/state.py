"""Rules about server-side state: ``previous_response_id``, ``conversation`` and ``store``."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.responses import index as fast
from proxy.core.responses.items import Item, Items, item_id, kind
from proxy.core.responses.rules.common import rule
from proxy.core.rule import Hit, Params


@rule(
    hint="Send either 'previous_response_id' or 'conversation', never both.",
)
def responses_state_conflict(history: Items, params: Params) -> list[Hit]:
    """``previous_response_id`` and ``conversation`` in one request.

    Both name the server-side state the input continues, and the Responses API reference says
    they cannot be used together (responses-api.md A5 item 12, praxis-proxy/ai#840). No repair
    can pick the one the client meant: the request is rejected (the path is
    ``conversation``).
    """
    request = history.request
    if request.get("previous_response_id") is None or request.get("conversation") is None:
        return []
    detail = "'previous_response_id' and 'conversation' cannot be used together"
    return [Hit(-1, "conversation", detail, fatal=True)]


@rule(
    hint=(
        "With store: false, replay items inline: send reasoning with its 'encrypted_content' "
        "(ask for include: ['reasoning.encrypted_content']) and no 'item_reference' items."
    ),
)
def responses_store_false(history: Items, params: Params) -> list[Hit]:
    """Items that only exist as server references in a request with ``store: false``.

    With ``store: false`` nothing was persisted, so an item the server must look up by id
    fails with 404 ``Item with id 'rs_…' not found. Items are not persisted when `store` is
    set to false. …`` (responses-api.md R6; vercel/ai#7543, opencode#7724): a reasoning item
    with an ``id`` but no ``encrypted_content`` (only its id can carry it), and any
    ``item_reference``. The ``drop`` repair drops such reasoning items (the model cannot read
    them anyway: without ``encrypted_content`` they hold no state), references to reasoning
    items (an ``rs_`` id: reasoning is never replayable by the client, so dropping it loses
    nothing the client could send; issue 22) and references to function calls (an ``fc_`` id,
    ``Item with id 'fc_…' not found``, R6b: the call's output, if sent, is then an output whose
    call is missing, which ``responses_orphan_output`` handles as R2; issue 32). Any other
    ``item_reference`` (a message's) stands for content the client meant to send and nothing
    can resolve it: the request is rejected.
    """
    if history.request.get("store") is not False:
        return []
    hits = []
    items = history.messages
    for i in history.positions(_LOOKED_UP) if fast.FAST else range(len(items)):
        item = items[i]
        k = kind(item)
        if k == "item_reference":
            detail = f"item_reference {item.get('id')!r} cannot be resolved: store is false"
            hits.append(Hit(i, ".id", detail, fatal=not _droppable_ref(item)))
        elif k == "reasoning" and item_id(item) and not item.get("encrypted_content"):
            detail = f"reasoning {item['id']!r} has no encrypted_content and store is false"
            hits.append(Hit(i, ".id", detail))
    return hits


_LOOKED_UP = frozenset({"item_reference", "reasoning"})


#: The id prefixes (R10) of items a reference may stand for and the repair may drop: reasoning
#: and function calls.
_DROPPABLE = ("rs_", "fc_")


def _droppable_ref(item: Item) -> bool:
    """An ``item_reference`` to a reasoning item or a function call (by its id's prefix)."""
    value = item.get("id")
    return type(value) is str and value.startswith(_DROPPABLE)


@responses_store_false.repair("drop")
def _drop(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    return history.without({hit.index for hit in hits if not hit.fatal})


RULES = (responses_state_conflict, responses_store_false)
