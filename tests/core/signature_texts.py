"""The exact error texts of the evidence files, one per catalogue row, with the place each names.

Shared by the catalogue's tests and the classifier's. Texts are quoted whole, as
provider-rules.md, providers-second-tier.md and responses-api.md have them (ids and indexes as in
the cited reports). ``param`` is the envelope's ``param`` where the evidence shows one.
"""

# ruff: noqa: E501 -- the provider texts are quoted whole

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Text:
    row: str  # the evidence row, covered by the signature that must match
    status: int
    text: str
    index: int | None = None
    field: str | None = None
    param: str | None = None
    api: str | None = None  # the wire API whose rows the text is matched against (None: all)


def _m(row: str, text: str, index: int | None = None, field: str | None = None) -> Text:
    """A Messages text (anthropic-messages.md §3), status 400."""
    return Text(row, 400, text, index, field, api="messages")


def _g(row: str, text: str, index: int | None = None) -> Text:
    """A Gemini-native text (gemini-native.md §3), status 400."""
    return Text(row, 400, text, index, api="gemini")


def _google(message: str) -> str:
    """``message`` in Google's envelope (gemini-native.md §2)."""
    return '{"error":{"code":400,"message":"' + message + '","status":"INVALID_ARGUMENT"}}'


TEXTS: list[Text] = [
    # provider-rules.md §1 OpenAI
    Text(
        "O1",
        400,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        3,
        "messages[3].role",
        "messages.[3].role",
    ),
    Text(
        "O2",
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_ctiGXrgM0r61c6nkf2v7zbKb",
        57,
        "messages[57].role",
        "messages.[57].role",
    ),
    Text(
        "O3",
        400,
        "Invalid parameter: 'tool_call_id' of 'call_XXXXXXXXX' not found in 'tool_calls' of previous message.",
    ),
    Text(
        "O4",
        400,
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_gmd4tanjXcwOxfPawOnDmq6R', in messages[7] and messages[8].",
        8,
        "messages[8].tool_call_id",
        "messages.[8].tool_call_id",
    ),
    Text(
        "O5",
        400,
        "Invalid type for 'messages[2].tool_calls[0].function.arguments': expected a string, but got an object instead.",
        2,
        "messages[2].tool_calls[0].function.arguments",
    ),
    Text(
        "O7",
        400,
        "Invalid 'messages[2].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        2,
        "messages[2].tool_calls",
    ),
    Text(
        "O8",
        400,
        "Invalid 'messages[3].tool_calls': array too long. Expected an array with maximum length 128, but got an array with length 200 instead.",
        3,
        "messages[3].tool_calls",
    ),
    Text(
        "O9",
        400,
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 325 instead.",
        None,
        "tools",
        "tools",
    ),
    Text(
        "O10",
        400,
        "Invalid 'messages[36].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 51 instead.",
        36,
        "messages[36].tool_calls[0].id",
    ),
    Text(
        "O11",
        400,
        "Invalid 'messages[69].tool_calls[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
        69,
        "messages[69].tool_calls[0].function.name",
    ),
    Text(
        "O12",
        400,
        "Unknown parameter: 'messages[1].tool_calls[0].index'.",
        1,
        "messages[1].tool_calls[0].index",
    ),
    Text(
        "O12",
        400,
        "Unknown parameter: 'messages[2].tool_calls[0].index'.",
        2,
        "messages[2].tool_calls[0].index",
    ),
    Text(
        "O13",
        400,
        "400 Unknown parameter: 'messages[0].content[0].cache_control'.",
        0,
        "messages[0].content[0].cache_control",
    ),
    Text(
        "O14",
        400,
        "Invalid value for 'content': expected a string, got null.",
        0,
        "messages[0].content",
        "messages.[0].content",
    ),
    Text(
        "O15",
        400,
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        None,
        "messages",
        "messages",
    ),
    Text(
        "O16",
        400,
        "Invalid 'messages[2].name': string does not match pattern. Expected a string that matches the pattern '^[^\\s<\\|\\\\/>]+$'.",
        2,
        "messages[2].name",
    ),
    Text(
        "O16",
        400,
        "Invalid 'messages[1].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        1,
        "messages[1].name",
    ),
    Text(
        "O18",
        400,
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'assistant' contains an image URL.",
        2,
        "messages[2]",
    ),
    Text(
        "O18",
        400,
        "Invalid 'messages[234]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.",
        234,
        "messages[234]",
    ),
    Text(
        "O19",
        400,
        "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
        0,
        "messages[0].role",
        "messages[0].role",
    ),
    Text(
        "O20",
        400,
        "Unsupported value: 'messages[0].role' does not support 'developer' with this model.",
        0,
        "messages[0].role",
    ),
    Text(
        "O21",
        400,
        "Unsupported value: 'messages[59].role' does not support 'function' with this model.",
        59,
        "messages[59].role",
    ),
    Text(
        "O22",
        400,
        "Additional properties are not allowed ('cosplay' was unexpected) - 'messages.1'",
        1,
        "messages[1].cosplay",
    ),
    # §1 Responses-API neighbours (R rows below)
    Text(
        "R11",
        400,
        "Invalid 'input[95].call_id': string too long. Expected a string with maximum length 64, but got a string with length 116 instead.",
        95,
        "input[95].call_id",
    ),
    # provider-rules.md §2 DeepSeek
    Text(
        "D1",
        400,
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
    ),
    Text(
        "D2",
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)",
    ),
    Text(
        "D3",
        400,
        "Missing `reasoning_content` field in the assistant message at message index 2. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
        2,
    ),
    Text("D4", 400, "The `reasoning_content` in the thinking mode must be passed back to the API."),
    Text(
        "D7",
        400,
        "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your message to reduce network traffic.",
        None,
        "messages[*].reasoning_content",
    ),
    Text(
        "D8",
        400,
        "deepseek-reasoner does not support successive user or assistant messages (messages[1] and messages[2] in your input). You should interleave the user/assistant messages in the message sequence.",
        2,
    ),
    Text(
        "D9",
        400,
        "Failed to deserialize the JSON body into the target type: messages[9]: invalid type: sequence, expected a string at line 1 column 45446",
        9,
        "messages[9]",
    ),
    Text(
        "D9",
        422,
        "Failed to deserialize the JSON body into the target type: messages[9]: invalid type: sequence, expected a string at line 1 column 45446",
        9,
        "messages[9]",
    ),
    Text(
        "D10",
        400,
        "Failed to deserialize the JSON body into the target type: messages[2]: data did not match any variant of untagged enum ChatCompletionRequestContent at line 1 column 18254",
        2,
        "messages[2]",
    ),
    Text(
        "D11",
        400,
        "Failed to deserialize the JSON body into the target type: messages[1]: missing field `content` at line 8 column 5",
        1,
        "messages[1]",
    ),
    Text("D12", 400, "Invalid assistant message: content or tool_calls must be set"),
    Text(
        "D14",
        422,
        "Failed to deserialize the JSON body into the target type: messages[0].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool` at line 5 column 25",
        0,
        "messages[0]",
    ),
    Text(
        "D14",
        400,
        "Failed to deserialize the JSON body into the target type: messages[0].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool`, `latest_reminder` at line 1 column 58",
        0,
        "messages[0]",
    ),
    Text(
        "D16",
        400,
        "Failed to deserialize the JSON body into the target type: tools[0]: unknown variant `custom` ",
    ),
    Text(
        "D19",
        400,
        "Failed to deserialize the JSON body into the target type: messages[4].role: unknown variant `tool`, expected `user` or `assistant` at line 1 column 1760",
    ),
    # provider-rules.md §3 Gemini
    Text(
        "G1",
        400,
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:write_file` , position 8. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
    ),
    Text(
        "G2",
        400,
        "Function call <Function Call> in the <index of contents array> content block is missing a thought_signature.",
    ),
    Text("G5", 400, "Corrupted thought signature."),
    Text(
        "G6",
        400,
        "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
    ),
    Text(
        "G7",
        400,
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
    ),
    Text(
        "G8",
        400,
        "Please ensure that function response turn comes immediately after a function call turn.",
    ),
    Text("G9", 400, "Expected string or list of content parts, got: null"),
    Text(
        "G11",
        400,
        "Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
    ),
    Text(
        "G12", 400, "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty."
    ),
    Text(
        "G13",
        400,
        "GenerateContentRequest.contents[2].parts[0].function_response.name: Name cannot be empty.",
    ),
    Text(
        "G14",
        400,
        'Invalid JSON payload received. Unknown name "reasoning": Cannot find field.',
        None,
        "reasoning",
    ),
    Text(
        "G14",
        400,
        'Invalid JSON payload received. Unknown name "google": Cannot find field.',
        None,
        "google",
    ),
    Text(
        "G15",
        400,
        "* tools[0].function_declarations[53].name: [FIELD_INVALID] Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.",
    ),
    Text(
        "G18", 400, "Function calling with a response mime type: 'application/json' is unsupported"
    ),
    # provider-rules.md §4 and providers-second-tier.md B1
    Text("MI1", 400, "Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of 9."),
    Text(
        "VL5", 500, "Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9, with a length of 9"
    ),
    Text("MI2", 400, "Unexpected role 'user' after role 'tool'"),
    Text("VL8", 400, "Unexpected role 'user' after role 'developer'"),
    Text("MI3", 400, "Unexpected role 'tool' after role 'user'"),
    Text("MI8", 400, "Unexpected role 'tool' after role 'system'"),
    Text("MI4", 400, "Not the same number of function calls and responses"),
    Text("MI5", 400, "Assistant message must have either content or tool_calls, but not none."),
    Text(
        "MI6",
        400,
        "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
    ),
    Text("MI9", 400, '{"error":"Unexpected tool call id b87624841 in tool results"}'),
    Text(
        "MI7",
        422,
        '{"detail":[{"type":"extra_forbidden","loc":["body","messages",6,"assistant","tool_calls",0,"name"],"msg":"Extra inputs are not permitted","input":null}]}',
        6,
        "messages[6].tool_calls[0].name",
    ),
    Text(
        "MI7",
        422,
        '{"detail":[{"type":"extra_forbidden","loc":["body","messages",3,"assistant","reasoning_content"],"msg":"Extra inputs are not permitted","input":null}]}',
        3,
        "messages[3].reasoning_content",
    ),
    # emulator wordings (no public source): proxy/emulator/mistral.py, kimi.py, ollama.py
    Text(
        "MI11",
        422,
        """{"object":"error","message":{"detail":[{"type":"union_tag_invalid","loc":["body","messages",0],"msg":"Input tag 'developer' found using 'role' does not match any of the expected tags: 'system', 'user', 'assistant', 'tool'","input":"developer"}]},"type":"invalid_request_error","param":null,"code":null}""",
        0,
        "messages[0]",
    ),
    Text("KI4", 400, "Invalid request: invalid role at messages[0]", 0, "messages[0]"),
    Text("OL3", 400, "invalid tool call arguments"),
    Text(
        "GR1",
        400,
        "'messages.2' : for 'role: assistant' the following must be satisfied[('messages.2' : property 'reasoning_content' is unsupported)]",
        2,
        "messages[2].reasoning_content",
    ),
    Text(
        "GR1",
        400,
        "'messages.1' : for 'role:user' the following must be satisfied[('messages.1' : property 'tool_calls' is unsupported, did you mean 'tool_call_id'?)]",
        1,
        "messages[1].tool_calls",
    ),
    Text(
        "GR2",
        400,
        "'messages.0' : for 'role:user' the following must be satisfied[('messages.0' : property 'timestamp' is unsupported)]",
        0,
        "messages[0].timestamp",
    ),
    Text(
        "GR3",
        400,
        "'messages.0' : for 'role:user' the following must be satisfied[('messages.0' : property 'metadata' is unsupported)]",
        0,
        "messages[0].metadata",
    ),
    Text("GR4", 400, "property 'reasoning' is unsupported", None, "reasoning"),
    Text("GR4", 400, "property 'store' is unsupported, did you mean 'stop'?", None, "store"),
    Text("GR5", 400, "Tools should have a name!"),
    Text("XA1", 400, "Only messages of role 'user' can have a name."),
    Text(
        "XA2",
        400,
        "The arguments to a tool_call with ID 'initial_list_datasets' are not a valid JSON string. Parsing error: Error(\"EOF while parsing a value\", line: 1, column: 0)",
    ),
    Text(
        "XA3",
        400,
        "Invalid request content: A tool_choice was set on the request but no tools were specified.",
    ),
    Text("XA4", 400, "The model expects a single `text` element per message."),
    Text(
        "XA5", 400, "Invalid request content: Each message must have at least one content element."
    ),
    Text(
        "KI5",
        400,
        "Invalid request: the message at position 0 with role 'system' must not be empty",
        0,
    ),
    Text(
        "KI1",
        400,
        "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: Shell:58",
    ),
    Text("KI2", 400, "tool_call_id  is not found"),
    Text(
        "KI3",
        400,
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 79",
        79,
    ),
    Text(
        "KI3",
        400,
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 4",
        4,
    ),
    Text(
        "QW1",
        400,
        '<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a response to a preceeding message with "tool_calls".',
    ),
    Text(
        "QW2",
        400,
        '<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" must be followed by tool messages responding to each "tool_call_id". The following tool_call_ids did not have response messages: message[15].role',
        15,
    ),
    Text(
        "QW3",
        400,
        "developer is not one of ['system', 'assistant', 'user', 'tool', 'function'] - 'messages.[0].role'",
        0,
        "messages[0].role",
    ),
    Text("QW4", 400, "Empty tool_calls is not supported in message"),
    Text(
        "QW5",
        400,
        "Invalid type for 'messages.[0].content': expected one of a string or array of objects, but got an object instead.",
        0,
        "messages[0].content",
    ),
    Text(
        "VE1",
        400,
        "The parameter `messages.role` specified in the request are not valid: invalid value: `developer`, supported values are: `system`, `assistant`, `user`, `tool`.",
    ),
    Text("ZH1", 400, '{"error":{"code":"1214","message":"messages 参数非法。请检查文档。"}}'),
    Text(
        "AN1",
        400,
        "messages.92.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        92,
        "messages[92]",
    ),
    Text(
        "AN2",
        400,
        "messages.167: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_019P95AL5DFCUyhtgQDcWJ3x. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        167,
        "messages[167]",
    ),
    Text(
        "B1-deepseek-anthropic",
        400,
        "messages.1:`tool_use` ids were found without `tool_result` blocks immediately after: call_01_c4cD…8581, call_02_5yhf…9513. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        1,
        "messages[1]",
    ),
    Text(
        "AN3",
        400,
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01FfCGddPyWsq3gCLqXtsJki. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ),
    Text("AN4", 400, "messages: text content blocks must be non-empty"),
    Text("VL1", 400, "Value error, `tools` must not be an empty array.", None, "tools"),
    Text(
        "VL2",
        400,
        "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 1121 (char 1120)",
    ),
    Text("VL3", 400, "TypeError: Can only get item pairs from a mapping."),
    Text("VL4", 400, "'str object' has no attribute 'items'"),
    Text("VL6", 400, "Cannot have 2 or more assistant messages at the end of the list."),
    Text(
        "VL7",
        500,
        "Error: Jinja Exception: After the optional system message, conversation roles must alternate user and assistant roles except for tool calls and results.",
    ),
    Text(
        "MI10",
        500,
        "Error: Jinja Exception: Conversation roles must alternate user/assistant/user/assistant/...",
    ),
    Text("OR1", 400, "Extra data: line 1 column 24 (char 23)"),
    Text(
        "OR2",
        400,
        "Gemini models require OpenRouter reasoning details to be preserved in each request. Please refer to our docs: https://openrouter.ai/docs/guides/best-practices/reasoning-tokens#preserving-reasoning-blocks. Upstream error: …",
    ),
    Text(
        "OL1",
        400,
        "json: cannot unmarshal object into Go struct field .messages.tool_calls.function.arguments of type string",
    ),
    Text(
        "OL2",
        400,
        "json: cannot unmarshal array into Go struct field ChatRequest.messages.content of type string",
    ),
    Text("MM1", 400, "invalid params, tool call result does not follow tool call (2013)"),
    Text(
        "AZ1",
        424,
        "Missing required parameter: 'messages[2].tool_calls[0].type'.",
        2,
        "messages[2].tool_calls[0].type",
    ),
    # responses-api.md A2
    Text(
        "R1",
        400,
        "No tool output found for function call call_k20FunjGZouIu7PaUIAHz2G6.",
        None,
        "input",
        "input",
    ),
    Text(
        "R2",
        400,
        "No tool call found for function call output with call_id call_uelfkqtHfJDC4Btqeoozq82e.",
        None,
        "input",
        "input",
    ),
    Text(
        "R3",
        400,
        "Item 'rs_06a2…4946' of type 'reasoning' was provided without its required following item.",
        None,
        "input",
        "input",
    ),
    Text(
        "R4",
        400,
        "Item 'fc_0a4d…8de1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0a4d…3e29'.",
        None,
        "input",
        "input",
    ),
    Text(
        "R5",
        400,
        "Item 'msg_…' of type 'message' was provided without its required 'reasoning' item",
    ),
    Text(
        "R6",
        404,
        "Item with id 'rs_…' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.",
    ),
    Text("R6b", 404, "Items are not persisted for Zero Data Retention organizations."),
    Text("R6c", 404, "Item with id 'rs_0433…ce92' not found."),
    Text("R7", 400, "The encrypted content gAAA...DQ== could not be verified."),
    Text(
        "R8",
        400,
        "Previous response with id 'resp_0f09a275409xxx' not found.",
        None,
        "previous_response_id",
        "previous_response_id",
    ),
    Text(
        "R9",
        400,
        "Duplicate item found with id fc_****. Remove duplicate items from your input and try again.",
    ),
    Text(
        "R10",
        400,
        "Invalid 'input[107].id': 'fc_08d2…04ebc0'. Expected an ID that begins with 'ctc'.",
        107,
        "input[107].id",
    ),
    Text(
        "R10",
        400,
        "[ApiIdParam] [input[274].id] [invalid_id_prefix] Invalid 'input[274].id': 'item_c270d5511c7129adc7475632'. Expected an ID that begins with 'fc'.",
        274,
        "input[274].id",
    ),
    Text(
        "R10",
        400,
        "Invalid 'input[15].id': 'reasoning_15'. Expected an ID that begins with 'rs'.",
        15,
        "input[15].id",
    ),
    Text(
        "R13",
        400,
        "Invalid value: 'output_text'. Supported values are: 'input_text', 'input_image', and 'input_file'.",
        2,
        "input[2].output[0]",
        "input[2].output[0]",
    ),
    Text(
        "R14",
        400,
        "Invalid value: 'other'. Supported values are: 'search', 'open_page', and 'find_in_page'.",
        33,
        "input[33].action.type",
        "input[33].action.type",
    ),
    Text(
        "R15",
        400,
        'Only `type:"function"` tools are supported on this endpoint. Built-in tools (web_search, file_search, code_interpreter, computer_use, mcp) are not executed here.',
        None,
        "tools[8].type",
        "tools.8.type",
    ),
    Text("R16", 400, "The `reasoning_text` in the thinking mode must be passed back to the API."),
    # anthropic-messages.md §3 (Anthropic's texts unless the row names a provider)
    _m(
        "M1",
        "messages.167: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_019P95AL5DFCUyhtgQDcWJ3x. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        167,
        "messages[167]",
    ),
    _m(
        "M6",
        "messages.1:`tool_use` ids were found without `tool_result` blocks immediately after: call_01_c4cD8581, call_02_5yhf9513. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        1,
        "messages[1]",
    ),
    _m("M1-MM", "invalid params, tool call result does not follow tool call (2013)"),
    _m(
        "M2",
        "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01FfCGddPyWsq3gCLqXtsJki. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        0,
        "messages[0].content[1]",
    ),
    _m("M2-MM", "invalid params, tool result's tool id(call_function_x1) not found (2013)"),
    _m(
        "M4",
        "messages.6.content.2: each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_01A",
        6,
        "messages[6].content[2]",
    ),
    _m("M5", "messages.3.content.1: `tool_use` ids must be unique", 3, "messages[3].content[1]"),
    _m(
        "M7",
        "messages.92.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        92,
        "messages[92].content[0]",
    ),
    _m("M8", "messages.2.content.0.tool_use.name: String should have at least 1 character"),
    Text(
        "M9",
        500,
        "[500]['ClaudeContentBlockToolResult' object has no attribute 'id'][abc123]",
        api="messages",
    ),
    _m(
        "M10",
        "messages.4.content.1: unexpected `tool_use_id` found in `advisor_tool_result` blocks: srvtoolu_01X. Each `advisor_tool_result` block must have a corresponding `server_tool_use` block before it.",
        4,
        "messages[4].content[1]",
    ),
    _m("M11", "messages: text content blocks must be non-empty"),
    _m("M12", "messages: text content blocks must contain non-whitespace text"),
    _m(
        "M13",
        "messages.3: all messages must have non-empty content except for the optional final assistant message",
        3,
        "messages[3]",
    ),
    _m("M14", "messages: final assistant content cannot end with trailing whitespace"),
    _m(
        "M15",
        "messages.2.content.1.text: cache_control cannot be set for empty text blocks",
        2,
        "messages[2].content[1]",
    ),
    _m("M16", "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    _m(
        "M17",
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
    ),
    _m(
        "M18",
        "messages.1.content.0.thinking.signature: Field required",
        1,
        "messages[1].content[0]",
    ),
    _m(
        "M18-invalid",
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        1,
        "messages[1].content[0]",
    ),
    _m(
        "M19",
        "messages.3.content.0: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
        3,
        "messages[3].content[0]",
    ),
    _m(
        "M20",
        "messages.3: The final block in an assistant message cannot be `thinking`.",
        3,
        "messages[3]",
    ),
    _m("M21-DS", "The `content[].thinking` in the thinking mode must be passed back to the API."),
    _m(
        "M21-K",
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 79",
        79,
    ),
    _m(
        "M22",
        "Failed to deserialize the JSON body into the target type: messages[1].content[0]: unknown variant `redacted_thinking`, expected one of `text`, `thinking` at line 1 column 240",
        1,
        "messages[1].content[0]",
    ),
    _m(
        "M23",
        "failed to convert tool result content: unsupported content type in ContentBlockParamUnion: tool_reference",
    ),
    _m("M24", "role 'system' is not supported on this model"),
    _m(
        "M24-DS",
        "Failed to deserialize the JSON body into the target type: messages[1].role: unknown variant `system`, expected `user` or `assistant` at line 1 column 1932",
        1,
        "messages[1]",
    ),
    Text(
        "M24-G",
        422,
        '{"detail":[{"type":"literal_error","loc":["body","messages",1,"role"],"msg":"Input should be \'user\' or \'assistant\'","input":"system","ctx":{"expected":"\'user\' or \'assistant\'"}}]}',
        1,
        "messages[1]",
        api="messages",
    ),
    _m("M24-MM", "invalid params, chat content has invalid message role: system (2013)"),
    _m(
        "M26",
        'messages: Unexpected role "tool". Allowed roles are "user" or "assistant". For instructions on how to use tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview.',
    ),
    _m(
        "M26-DS",
        "Failed to deserialize the JSON body into the target type: messages[4].role: unknown variant `tool`, expected `user` or `assistant` at line 1 column 1760",
    ),
    _m(
        "M28",
        "This model does not support assistant message prefill. The conversation must end with a user message.",
    ),
    _m("M29", "tools: Tool names must be unique."),
    _m("M30", "a max of 128 tools can be supported"),
    _m(
        "M31",
        "Failed to deserialize the JSON body into the target type: tools[0]: unknown variant `custom`, expected `web_search_20250305` or `web_search_20260209`",
    ),
    _m("M32", "invalid thinking: only type=enabled is allowed for this model"),
    _m(
        "M33",
        "messages.5.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.",
    ),
    _m("M35", "Thinking mode does not support this tool_choice"),
    _m("M36", "invalid params, function name or parameters is empty (2013)"),
    _m("M-G1214", '{"error":{"code":"1214","message":"messages 参数非法。请检查文档。"}}'),
    # Gemini's native API (gemini-native.md §3), in each endpoint's envelope (§2).
    _g(
        "N1",
        _google(
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
        ),
    ),
    _g(
        "N1",
        '{"error":{"code":400,"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","status":"INVALID_ARGUMENT","errors":[{"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","domain":"global","reason":"badRequest"}]}}',
    ),
    _g(
        "N2",
        _google(
            "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
        ),
    ),
    _g(
        "N3",
        _google(
            "Please ensure that function response turn comes immediately after a function call turn."
        ),
    ),
    _g(
        "N5",
        _google(
            "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:read_file` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
        ),
    ),
    _g(
        "N5v",
        _google(
            "Unable to submit request because function call `default_api:read_file` in the 2. content block is missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
        ),
        index=2,
    ),
    _g("N6", _google("Tool call part is missing thought_signature")),
    _g(
        "N7",
        _google(
            "Invalid JSON payload received. Unknown name \\\"thoughtSignature\\\" at 'contents[1].parts[0].function_call': Cannot find field."
        ),
        index=1,
    ),
    _g("N8", _google("Corrupted thought signature.")),
    _g(
        "N8v",
        _google(
            "Unable to submit request because Thought signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
        ),
    ),
    _g(
        "N10",
        _google(
            "Invalid JSON payload received. Unknown name \\\"id\\\" at 'contents[2].parts[0].function_response': Cannot find field."
        ),
        index=2,
    ),
    _g(
        "N11",
        _google("* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\\n"),
        index=1,
    ),
    _g(
        "N12",
        _google(
            "* GenerateContentRequest.contents[2].parts[0].function_response.name: Name cannot be empty.\\n"
        ),
        index=2,
    ),
    _g("N14", _google("Please use a valid role: user, model.")),
]

#: Texts the catalogue must NOT claim (statuses no retry or classification is about, or
#: generic texts that name no rule).
UNKNOWN: list[tuple[int, str]] = [
    (400, "Request contains an invalid argument."),
    (400, "Provider returned error"),
    (400, "Invalid 'tools[0].function.parameters': schema is invalid."),
    (503, "Service Unavailable"),
    (200, "must be a response to a preceeding message with 'tool_calls'"),
]
