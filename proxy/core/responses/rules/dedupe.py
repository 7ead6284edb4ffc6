"""``responses_duplicate_item``: the same item, call or output sent twice."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.responses import index as fast
from proxy.core.responses.items import Item, Items, call_key, item_id, kind, needs_output
from proxy.core.responses.rules.common import answers_a_call, rule
from proxy.core.responses.rules.facts import distinct_ids, tool_facts
from proxy.core.rule import Hit, Params


@rule(
    hint="Send every item once: no repeated ids, one call per call_id and one output per call.",
)
def responses_duplicate_item(history: Items, params: Params) -> list[Hit]:
    """An item id used twice, a call repeated, or a second output for one call.

    OpenAI answers ``Duplicate item found with id fc_…. Remove duplicate items from your input
    and try again.`` (responses-api.md R9, vercel/ai#13307), and binds outputs to calls one to
    one, so a second output for a call fails with ``No tool call found for function call output
    with call_id …`` (R2; the codex fork's ``repair_call_output_pairs``). The ``dedupe`` repair
    drops an item identical to an earlier one, drops the ``id`` of a different item reusing an
    id, drops a call identical to an earlier call with its ``call_id``, and keeps the last of
    two outputs for one call (the agents SDK's ``deduplicate_input_items`` keys on ``id`` and
    ``call_id`` the same way).
    """
    facts = tool_facts(history)
    if fast.FAST and facts is not None and facts.distinct and distinct_ids(history):
        return []  # no id, call_id of a call or call_id of an output repeats: nothing to find
    return _Scan(history.messages).run()


class _Scan:
    """One pass over the items, remembering ids, calls and the output that answered each."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.hits: list[Hit] = []
        self.ids: dict[str, int] = {}
        self.calls: dict[str, list[int]] = {}
        self.open: dict[str, int] = {}
        self.answer: dict[str, int] = {}

    def run(self) -> list[Hit]:
        for i, item in enumerate(self.items):
            if self._same_id(i, item):
                continue
            key = call_key(item)
            if key is None:
                continue
            if needs_output(item):
                self._call(i, item, key)
            elif answers_a_call(item):
                self._output(i, key)
        return sorted(self.hits, key=lambda h: h.index)

    def _same_id(self, i: int, item: Item) -> bool:
        """Note the item's id; True when the item is dropped as a copy of an earlier one."""
        iid = item_id(item)
        if iid is None or (kind(item) == "local_shell_call_output" and "call_id" not in item):
            return False  # a legacy local shell output's id is its call's id
        first = self.ids.setdefault(iid, i)
        if first == i:
            return False
        if self.items[first] == item:
            self.hits.append(Hit(i, "", f"copy of input[{first}]", data="drop"))
            return True
        self.hits.append(Hit(i, ".id", f"id {iid!r} is also used by input[{first}]", data="id"))
        return False

    def _call(self, i: int, item: Item, key: str) -> None:
        earlier = self.calls.setdefault(key, [])
        same = next((c for c in earlier if self.items[c] == item), None)
        if same is not None:
            self.hits.append(Hit(i, "", f"repeats the call in input[{same}]", data="drop"))
            return
        earlier.append(i)
        self.open[key] = self.open.get(key, 0) + 1

    def _output(self, i: int, key: str) -> None:
        if self.open.get(key, 0) > 0:
            self.open[key] -= 1
        elif key in self.answer:  # a second output for an answered call: keep the last one
            detail = f"second output for call_id {key!r}; the one in input[{i}] is kept"
            self.hits.append(Hit(self.answer[key], "", detail, data="drop"))
        else:
            return  # an output of no call: responses_orphan_output's business
        self.answer[key] = i


@responses_duplicate_item.repair("dedupe")
def _dedupe(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    changes = {
        h.index: {k: v for k, v in history.messages[h.index].items() if k != "id"}
        for h in hits
        if h.data == "id"
    }
    return history.replace(changes).without({h.index for h in hits if h.data == "drop"})


RULES = (responses_duplicate_item,)
