"""The ``google-genai`` Python SDK pointed at the proxy's root (``http_options.base_url``, as
``GOOGLE_GEMINI_BASE_URL``), on Gemini 2.5 and Gemini 3: its own requests (a plain
``generate_content``, a stream, automatic function calling with a Python function over a
parallel step and a single one) are ``clean``, reach the strict AI Studio emulator byte for byte
and their answers come back unchanged; the broken histories clients are known to send (a call
whose response was lost, a parallel step answered in part: gemini-native.md §4, N1) are
``repaired`` and answered 200. In Vertex mode its Vertex paths reach the Vertex emulator.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients.conftest import TIMEOUT, require
from tests.clients.gemini_guard import CLIENT_KEY, GEMINI_MODELS, GeminiGuard

parametrize_models = pytest.mark.parametrize("model", GEMINI_MODELS, ids=GEMINI_MODELS)
#: The files the tool reads; the prompt's directives make the emulator call it: config.py and
#: app.py at once (one parallel step), then notes.txt, then a text (proxy/emulator/
#: gemini_native_answer.py).
FILES = {"config.py": "x = 1", "app.py": "import config", "notes.txt": "the answer is 42"}
LOOP = (
    "Read config.py and app.py, then notes.txt. "
    '[[tool_use read_file {"path": "config.py"}]] & [[tool_use read_file {"path": "app.py"}]] '
    '[[tool_use read_file {"path": "notes.txt"}]]'
)

#: The same tool loop without a parallel step.
SEQUENTIAL = (
    "Read config.py, then notes.txt. "
    '[[tool_use read_file {"path": "config.py"}]] [[tool_use read_file {"path": "notes.txt"}]]'
)


def read_file(path: str) -> str:
    """Read a file of the project.

    Args:
        path: The file's path, relative to the project's root.
    """
    return FILES[path]


@pytest.fixture
def client(gguard: GeminiGuard) -> Any:
    genai = require("google.genai")
    options = genai.types.HttpOptions(
        base_url=gguard.url, api_version="v1beta", timeout=int(TIMEOUT * 1000)
    )
    return genai.Client(api_key=CLIENT_KEY, http_options=options)


def tool_config(types: Any) -> Any:
    return types.GenerateContentConfig(
        tools=[read_file], system_instruction="You are a coding agent."
    )


@parametrize_models
def test_generate_content_is_clean(client: Any, gguard: GeminiGuard, model: str) -> None:
    answer = client.models.generate_content(model=model, contents="Say hello.")
    assert answer.text == "Emulated gemini answer to: Say hello."
    gguard.assert_clean(model)
    gguard.assert_relayed()


@parametrize_models
def test_stream_is_clean(client: Any, gguard: GeminiGuard, model: str) -> None:
    stream = client.models.generate_content_stream(model=model, contents="Say hello twice.")
    chunks = [chunk.text or "" for chunk in stream]
    assert len(chunks) > 1  # streamed, not buffered into one answer
    assert "".join(chunks) == "Emulated gemini answer to: Say hello twice."
    exchange = gguard.assert_clean(model)[0]
    assert exchange.path.endswith(":streamGenerateContent")
    gguard.assert_relayed()


@parametrize_models
def test_automatic_function_calling_is_clean(client: Any, gguard: GeminiGuard, model: str) -> None:
    types = require("google.genai.types")
    answer = client.models.generate_content(model=model, contents=LOOP, config=tool_config(types))
    assert answer.text == 'The tool returned: {"result": "the answer is 42"}'
    requests = gguard.assert_clean(model, 3)
    gguard.assert_relayed()
    last = requests[-1].body.decode()
    assert '"x = 1"' in last  # both parallel results went back
    assert '"import config"' in last
    if model.startswith("gemini-3"):
        assert last.count("thoughtSignature") == 2  # one per step, echoed as the emulator sent


@parametrize_models
def test_streamed_automatic_function_calling_is_clean(
    client: Any, gguard: GeminiGuard, model: str
) -> None:
    types = require("google.genai.types")
    stream = client.models.generate_content_stream(
        model=model, contents=SEQUENTIAL, config=tool_config(types)
    )
    text = "".join(chunk.text or "" for chunk in stream)
    assert text == 'The tool returned: {"result": "the answer is 42"}'
    gguard.assert_clean(model, 3)
    gguard.assert_relayed()


@parametrize_models
def test_streamed_parallel_step_is_repaired(client: Any, gguard: GeminiGuard, model: str) -> None:
    """The SDK's streamed AFC keeps each chunk's content as a content of its own
    (``models.py`` ``generate_content_stream``: ``contents.extend(model_output)``); a parallel
    step streamed one call per chunk then goes back as two model contents in a row answered
    by one response turn, which Google refuses (N1/N2): the proxy merges the step."""
    types = require("google.genai.types")
    stream = client.models.generate_content_stream(
        model=model, contents=LOOP, config=tool_config(types)
    )
    text = "".join(chunk.text or "" for chunk in stream)
    assert text == 'The tool returned: {"result": "the answer is 42"}'
    requests = gguard.assert_outcomes(model, ["clean", "repaired", "repaired"])
    gguard.assert_relayed()
    assert b'"role": "model"}, {"parts": [{"functionCall"' in requests[1].body  # split step


@parametrize_models
def test_vertex_automatic_function_calling_is_clean(gguard: GeminiGuard, model: str) -> None:
    """The SDK in Vertex mode (an OAuth token, a project and a location) sends Vertex's paths,
    which the proxy routes by their shape to the ``vertex`` upstream; the token passes through."""
    genai = require("google.genai")
    credentials = require("google.oauth2.credentials").Credentials(token=CLIENT_KEY)
    options = genai.types.HttpOptions(base_url=gguard.url, timeout=int(TIMEOUT * 1000))
    client = genai.Client(
        vertexai=True,
        project="offline",
        location="us-central1",
        credentials=credentials,
        http_options=options,
    )
    config = tool_config(genai.types)
    answer = client.models.generate_content(model=model, contents=LOOP, config=config)
    assert answer.text == 'The tool returned: {"result": "the answer is 42"}'
    requests = gguard.assert_clean(model, 3)  # each attempt found at the Vertex emulator
    gguard.assert_relayed()
    resource = "/projects/offline/locations/us-central1/publishers/google/models/"
    assert all(resource in e.path for e in requests)
    received = gguard.upstreams["vertex"].received
    assert {r.headers.get("authorization") for r in received} == {f"Bearer {CLIENT_KEY}"}


def _call(name: str, path: str) -> dict[str, Any]:
    return {"function_call": {"name": name, "args": {"path": path}}}


def _response(name: str, output: str) -> dict[str, Any]:
    return {"function_response": {"name": name, "response": {"result": output}}}


#: What the proxy must do with each broken form, per model: the form as a client leaves it
#: (gemini-native.md §4) and the responses the repaired request carries (none invented: a
#: lost output becomes ``{"error": …}``, §5 N1).
BROKEN = {
    "lost_response": ("repaired", 2),  # interrupted: the next prompt follows the call turn
    "partial_parallel": ("repaired", 2),  # one answer of a parallel step lost
    "lost_signature": ("clean", 2),  # a step made on another model: no signature (N5)
}


@pytest.mark.parametrize("case", list(BROKEN))
@parametrize_models
def test_broken_history_is_repaired(
    client: Any, gguard: GeminiGuard, model: str, case: str
) -> None:
    """Sent through ``generate_content(contents=[...])``; an unsigned step is broken only on
    Gemini 3 (Gemini 2.5 does not check signatures: it must stay ``clean`` there)."""
    types = require("google.genai.types")
    ask = {"role": "user", "parts": [{"text": "Read config.py and app.py."}]}
    calls: list[dict[str, Any]] = [_call("read_file", "config.py"), _call("read_file", "app.py")]
    if model.startswith("gemini-3") and case != "lost_signature":  # signed as the SDK keeps it
        calls[0]["thought_signature"] = b"skip_thought_signature_validator"
    step = {"role": "model", "parts": calls}
    answers = [_response("read_file", "x = 1"), _response("read_file", "import config")]
    tail = {
        "lost_response": [{"role": "user", "parts": [{"text": "Never mind; say hello."}]}],
        "partial_parallel": [{"role": "user", "parts": answers[:1]}],
        "lost_signature": [{"role": "user", "parts": answers}],
    }[case]
    contents = [types.Content.model_validate(c) for c in (ask, step, *tail)]
    answer = client.models.generate_content(
        model=model, contents=contents, config=tool_config(types)
    )
    assert answer.candidates[0].content.parts
    outcome, responses = BROKEN[case]
    if model.startswith("gemini-3"):  # Gemini 3 checks the current turn's signatures
        outcome = "repaired"
    exchange = gguard.assert_outcomes(model, [outcome])[0]
    gguard.assert_relayed()
    forwarded = gguard.attempts(model, exchange)[-1]
    assert forwarded.count(b'"functionResponse"') == responses
    if case != "lost_signature":
        assert b'"error"' in forwarded  # the lost output said so, nothing invented


def test_side_requests_are_relayed(client: Any, gguard: GeminiGuard) -> None:
    """``countTokens`` (routed by its path's model) and the model list and a model's resource
    (no model action: the upstream serving the API) are relayed unchecked (issue 33 item 1)."""
    counted = client.models.count_tokens(model="gemini-2.5-flash", contents="Say hello.")
    assert counted.total_tokens > 0
    names = [model.name for model in client.models.list()]
    assert "models/gemini-3-pro-preview" in names
    assert client.models.get(model="gemini-2.5-flash").name == "models/gemini-2.5-flash"
    assert not gguard.chats()
    side = [(e.method, e.path, e.status) for e in gguard.side_requests()]
    assert side == [
        ("POST", "/v1beta/models/gemini-2.5-flash:countTokens", 200),
        ("GET", "/v1beta/models", 200),
        ("GET", "/v1beta/models/gemini-2.5-flash", 200),
    ]
    assert all(e.outcome is None for e in gguard.side_requests())  # never checked


def test_prefix_routes_a_model_no_glob_matches(gguard: GeminiGuard) -> None:
    """``GOOGLE_GEMINI_BASE_URL=<proxy>/gemini`` routes by the prefix: a tuned model's name
    matches no upstream's globs (the default serves no native API), yet it reaches AI Studio."""
    genai = require("google.genai")
    options = genai.types.HttpOptions(base_url=f"{gguard.url}/gemini", api_version="v1beta")
    client = genai.Client(api_key=CLIENT_KEY, http_options=options)
    answer = client.models.generate_content(model="tuned-coder-7", contents="Say hello.")
    assert answer.text == "Emulated gemini answer to: Say hello."
    (exchange,) = gguard.assert_clean("tuned-coder-7")
    assert exchange.path == "/gemini/v1beta/models/tuned-coder-7:generateContent"
    bare = genai.types.HttpOptions(base_url=gguard.url, api_version="v1beta")
    unprefixed = genai.Client(api_key=CLIENT_KEY, http_options=bare)
    with pytest.raises(genai.errors.ClientError) as refused:
        unprefixed.models.generate_content(model="tuned-coder-7", contents="Say hello.")
    assert refused.value.code == 400  # the default serves no native API: the prefix routed it
