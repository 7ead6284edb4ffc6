"""The real ``google-genai`` Python client against the native Gemini emulators over sockets:
text, streaming, the mid-stream error, function-call round trips (automatic function calling
with parallel calls on Gemini 3, signatures echoed; a manual round trip), Vertex Express mode,
countTokens and the model list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from proxy.emulator.asgi import ReceivedRequest
from proxy.emulator.gemini_native import create_gemini_native_app

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

from tests.servers import running  # noqa: E402

SCRIPT = (
    'Read a, then b and c. [[tool_use read_file {"path": "a"}]] '
    '[[tool_use read_file {"path": "b"}]] & [[tool_use read_file {"path": "c"}]]'
)


def read_file(path: str) -> str:
    """Read a file."""
    READS.append(path)
    return f"contents of {path}"


READS: list[str] = []


@pytest.fixture
def received() -> list[ReceivedRequest]:
    READS.clear()
    return []


@pytest.fixture
def aistudio(received: list[ReceivedRequest]) -> Iterator[Any]:
    with running(create_gemini_native_app("aistudio", received=received)) as url:
        options = types.HttpOptions(base_url=url, api_version="v1beta")
        yield genai.Client(api_key="emulated", http_options=options)


def test_generate_content(aistudio: Any, received: list[ReceivedRequest]) -> None:
    response = aistudio.models.generate_content(model="gemini-2.5-flash", contents="Hi there.")
    assert response.text == "Emulated gemini answer to: Hi there."
    assert response.usage_metadata.total_token_count > 0
    assert received[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert received[0].headers["x-goog-api-key"] == "emulated"


def test_streaming(aistudio: Any) -> None:
    chunks = list(
        aistudio.models.generate_content_stream(model="gemini-2.5-flash", contents="One two.")
    )
    assert len(chunks) > 2
    assert "".join(c.text for c in chunks) == "Emulated gemini answer to: One two."
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_a_mid_stream_error_raises_in_the_sdk() -> None:
    with running(create_gemini_native_app("aistudio")) as url:
        options = types.HttpOptions(
            base_url=url, api_version="v1beta", headers={"x-emulator-stream-error": "503"}
        )
        client = genai.Client(api_key="emulated", http_options=options)
        chunks = client.models.generate_content_stream(
            model="gemini-2.5-flash", contents="Tell me more."
        )
        seen = [next(chunks).text]
        with pytest.raises(errors.ServerError) as raised:
            next(chunks)
    assert seen == ["Emulated "]
    assert raised.value.code == 503
    assert raised.value.status == "UNAVAILABLE"


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview"])
def test_automatic_function_calling_loop(
    aistudio: Any, received: list[ReceivedRequest], model: str
) -> None:
    """Three requests (a call, two parallel calls, the answer), each accepted: the SDK echoes
    the emulator's signature on Gemini 3, where an unsigned step would be refused (N5)."""
    config = types.GenerateContentConfig(tools=[read_file])
    chat = aistudio.chats.create(model=model, config=config)
    response = chat.send_message(SCRIPT)
    assert READS == ["a", "b", "c"]
    assert response.text == (
        'The tool returned: {"result": "contents of b"} | {"result": "contents of c"}'
    )
    assert len(received) == 3
    if model.startswith("gemini-3"):
        assert b"thoughtSignature" in received[-1].body
    follow = chat.send_message("Thanks.")
    assert follow.text == "Emulated gemini answer to: Thanks."


def test_manual_function_call_round_trip(aistudio: Any) -> None:
    config = types.GenerateContentConfig(
        tools=[read_file],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    model = "gemini-3-flash-preview"
    prompt = types.Content(role="user", parts=[types.Part(text=SCRIPT)])
    first = aistudio.models.generate_content(model=model, contents=[prompt], config=config)
    (call,) = first.function_calls
    assert (call.name, call.args) == ("read_file", {"path": "a"})
    turn = first.candidates[0].content
    assert turn.parts[0].thought_signature  # bytes, as the SDK decodes them
    reply = types.Part.from_function_response(name=call.name, response={"output": "A"})
    history = [prompt, turn, types.Content(role="user", parts=[reply])]
    second = aistudio.models.generate_content(model=model, contents=history, config=config)
    assert [c.args for c in second.function_calls] == [{"path": "b"}, {"path": "c"}]
    unsigned = types.Content(role="model", parts=[types.Part(function_call=call)])
    with pytest.raises(errors.ClientError) as refused:
        aistudio.models.generate_content(
            model=model, contents=[prompt, unsigned, history[2]], config=config
        )
    assert refused.value.code == 400
    assert "missing a thought_signature" in refused.value.message


def test_vertex_express_mode() -> None:
    received: list[ReceivedRequest] = []
    with running(create_gemini_native_app("vertex", received=received)) as url:
        client = genai.Client(
            vertexai=True, api_key="emulated", http_options=types.HttpOptions(base_url=url)
        )
        config = types.GenerateContentConfig(tools=[read_file])
        response = client.models.generate_content(
            model="gemini-3-pro-preview", contents=SCRIPT, config=config
        )
    assert response.text.startswith("The tool returned")
    assert received[0].path.startswith("/v1beta1/publishers/google/models/gemini-3-pro-preview")


def test_count_tokens_and_model_list(aistudio: Any) -> None:
    counted = aistudio.models.count_tokens(model="gemini-2.5-flash", contents="Hello.")
    assert counted.total_tokens > 0
    names = [m.name for m in aistudio.models.list()]
    assert "models/gemini-3-pro-preview" in names
