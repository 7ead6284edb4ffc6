"""The schema of Responses input items, as the emulator checks them one by one.

Item shapes from openai-python ``src/openai/types/responses/response_input_item_param.py``
(the union ``ResponseInputItemParam``); error texts from responses-api.md A2 (R10, R11, R12,
R13) and OpenAI's schema wording (``Missing required parameter``, ``Invalid type for``).
"""

from __future__ import annotations

from typing import Any

from proxy.emulator.common import Rejection, openai_rejection
from proxy.emulator.openai_errors import invalid_value, quoted_list, too_long, wrong_type

#: Each client-executed call type and the output type that answers it.
PAIRED_OUTPUTS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
    "program": "program_output",
}
_SERVER_RUN = (
    *("web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"),
    *("mcp_call", "mcp_list_tools", "mcp_approval_request"),
)
REQUIRED: dict[str, tuple[str, ...]] = {
    "message": ("role", "content"),
    "function_call": ("call_id", "name", "arguments"),
    "function_call_output": ("call_id", "output"),
    "custom_tool_call": ("call_id", "name", "input"),
    "custom_tool_call_output": ("call_id", "output"),
    "computer_call": ("call_id",),
    "computer_call_output": ("call_id", "output"),
    "local_shell_call": ("call_id", "action"),
    "local_shell_call_output": ("output",),
    "shell_call": ("call_id", "action"),
    "shell_call_output": ("call_id", "output"),
    "apply_patch_call": ("call_id", "operation"),
    "apply_patch_call_output": ("call_id", "status"),
    "tool_search_call": ("arguments",),
    "tool_search_output": ("tools",),
    "program": ("call_id", "code"),
    "program_output": ("call_id", "result"),
    "reasoning": ("summary",),
    "compaction": ("encrypted_content",),
    "compaction_trigger": (),
    "additional_tools": ("tools",),
    "item_reference": ("id",),
    "mcp_approval_response": ("approval_request_id", "approve"),
    **{kind: ("id",) for kind in _SERVER_RUN},
}
SUPPORTED = tuple(REQUIRED)
ROLES = ("user", "assistant", "system", "developer")
#: R10: the prefix each type's id must begin with (outputs share their call's: ``fco_``).
ID_PREFIX = {
    "message": "msg",
    "reasoning": "rs",
    "function_call": "fc",
    "function_call_output": "fc",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctc",
    "compaction": "cmp",
}
OUTPUT_PARTS = ("input_text", "input_image", "input_file")
MAX_CALL_ID = 64


def item_type(item: dict[str, Any]) -> str:
    """``type``, else ``message`` for an item with a role, else ``item_reference``."""
    kind = item.get("type")
    if isinstance(kind, str):
        return kind
    return "message" if "role" in item else "item_reference"


def produces(item: dict[str, Any]) -> bool:
    """An item a model emits after its reasoning: an assistant message, a call, a tool item."""
    kind = item_type(item)
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in PAIRED_OUTPUTS or kind in _SERVER_RUN


def answers(item: dict[str, Any]) -> bool:
    """True for an output item (the other side of `PAIRED_OUTPUTS`)."""
    return item_type(item) in PAIRED_OUTPUTS.values()


def binding(item: dict[str, Any]) -> str | None:
    """The call id a client-executed call or its output pairs on; None for other items."""
    kind = item_type(item)
    if kind in ("tool_search_call", "tool_search_output") and item.get("execution") != "client":
        return None  # run by the server: nothing for the client to answer
    if kind not in PAIRED_OUTPUTS and not answers(item):
        return None
    key = item.get("call_id")
    if key is None and kind == "local_shell_call_output":
        key = item.get("id")
    return key if isinstance(key, str) else None


def check_item(item: Any, i: int) -> Rejection | None:
    """Schema errors of ``input[i]``, or None."""
    path = f"input[{i}]"
    if not isinstance(item, dict):
        return wrong_type(path, "an object", item)
    if "type" in item and not isinstance(item["type"], str):
        return wrong_type(f"{path}.type", "a string", item["type"])
    kind = item_type(item)
    if kind not in REQUIRED:
        return invalid_value(f"{path}.type", kind, SUPPORTED)
    for key in REQUIRED[kind]:
        if key not in item:
            msg = f"Missing required parameter: '{path}.{key}'."
            rule = "R12" if key == "call_id" else "O-schema"
            return openai_rejection(
                rule, msg, param=f"{path}.{key}", code="missing_required_parameter"
            )
    if kind == "message" and item["role"] not in ROLES:
        return invalid_value(f"{path}.role", str(item["role"]), ROLES)
    return _call_id(item, path) or _id(item, kind, path) or _parts(item, kind, path)


def _call_id(item: dict[str, Any], path: str) -> Rejection | None:
    if "call_id" not in item or item["call_id"] is None:
        if item_type(item) == "local_shell_call_output" and not isinstance(item.get("id"), str):
            msg = f"Missing required parameter: '{path}.call_id'."
            return openai_rejection(
                "R12", msg, param=f"{path}.call_id", code="missing_required_parameter"
            )
        return None
    value, where = item["call_id"], f"{path}.call_id"
    if not isinstance(value, str):
        return wrong_type(where, "a string", value)
    if not value:
        msg = (
            f"Invalid '{where}': string too short. Expected a string with minimum length 1, "
            "but got an empty string instead."
        )
        return openai_rejection("R12", msg, param=where, code="string_below_min_length")
    if len(value) > MAX_CALL_ID:
        return too_long(where, value, MAX_CALL_ID, "R11")
    return None


def _id(item: dict[str, Any], kind: str, path: str) -> Rejection | None:
    value = item.get("id")
    if value is None:
        return None
    if not isinstance(value, str):
        return wrong_type(f"{path}.id", "a string", value)
    prefix = ID_PREFIX.get(kind)
    if prefix is None or value.startswith(prefix):
        return None
    msg = f"Invalid '{path}.id': '{value}'. Expected an ID that begins with '{prefix}'."
    return openai_rejection("R10", msg, param=f"{path}.id", code="invalid_value")


def _parts(item: dict[str, Any], kind: str, path: str) -> Rejection | None:
    output = item.get("output")
    if kind not in ("function_call_output", "custom_tool_call_output"):
        return None
    if isinstance(output, str):
        return None
    if not isinstance(output, list):
        return wrong_type(f"{path}.output", "a string or an array", output)
    for j, part in enumerate(output):
        if not isinstance(part, dict):
            return wrong_type(f"{path}.output[{j}]", "an object", part)
        if part.get("type") not in OUTPUT_PARTS:
            supported = quoted_list(OUTPUT_PARTS)
            msg = f"Invalid value: '{part.get('type')}'. Supported values are: {supported}."
            return openai_rejection("R13", msg, param=f"{path}.output[{j}]", code="invalid_value")
    return None
