"""``responses_output_content_types``: content parts a call output may not hold."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from proxy.core.responses.items import Items
from proxy.core.responses.rules.common import rule
from proxy.core.rule import Hit, Params

#: Outputs whose ``output`` may be a list of content parts (``input_text``, ``input_image``,
#: ``input_file``: openai-python ``ResponseFunctionCallOutputItemListParam``).
_PART_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


@rule(
    tools_only=True,
    hint="Use 'input_text' parts (not 'output_text') inside a call's output.",
)
def responses_output_content_types(history: Items, params: Params) -> list[Hit]:
    """An ``output_text`` part inside a call output.

    Converters that copy an assistant message's parts into a tool output get ``Invalid value:
    'output_text'. Supported values are: 'input_text', 'input_image', and 'input_file'.`` with
    param ``input[2].output[0]`` (responses-api.md R13, litellm#18212). The ``convert`` repair
    makes it an ``input_text`` part with the same text; a part without a string ``text`` is
    rejected.
    """
    hits = []
    items = history.messages
    for i in _listed(history):
        for j, part in enumerate(items[i]["output"]):
            if type(part) is dict and part.get("type") == "output_text":
                fatal = type(part.get("text")) is not str
                hits.append(Hit(i, f".output[{j}]", "output_text part in a call output", j, fatal))
    return hits


def _listed(history: Items) -> list[int]:
    """The positions of the outputs whose ``output`` is a list of parts, in order."""
    index, items = history.index, history.messages
    found = [index.lists(items, k, "output") for k in index.kind_set & _PART_OUTPUTS]
    if len(found) == 1:
        return found[0]  # (shared: the index's)
    return sorted(chain.from_iterable(found))


@responses_output_content_types.repair("convert")
def _convert(history: Items, hits: Sequence[Hit], params: Params) -> Items:
    changes: dict[int, dict[str, Any]] = {}
    for hit in hits:
        if hit.fatal:
            continue
        item = changes.get(hit.index, history.messages[hit.index])
        output = list(item["output"])
        output[hit.data] = {"type": "input_text", "text": output[hit.data]["text"]}
        changes[hit.index] = {**item, "output": output}
    return history.replace(changes)


RULES = (responses_output_content_types,)
