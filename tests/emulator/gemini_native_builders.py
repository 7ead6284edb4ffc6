"""Builders for native Gemini requests, and a way to post them to each endpoint's emulator."""

from __future__ import annotations

import json
from typing import Any

import httpx

from proxy.emulator.gemini_native import Strictness, create_gemini_native_app
from tests.emulator.test_app import send

Obj = dict[str, Any]
ENDPOINTS = ("aistudio", "vertex", "code-assist")
SKIP = "skip_thought_signature_validator"
CONTEXT = "context_engineering_is_the_way_to_go"
PATH = {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}, "required": ["path"]}
READ = {"functionDeclarations": [{"name": "read_file", "parameters": PATH}]}


def user(*texts: str) -> Obj:
    return {"role": "user", "parts": [{"text": t} for t in texts or ("Read a.",)]}


def model(*parts: Obj) -> Obj:
    return {"role": "model", "parts": list(parts)}


def text(value: str = "Done.") -> Obj:
    return {"text": value}


def call(name: str = "read_file", signature: str | None = None, **extra: Any) -> Obj:
    """A ``functionCall`` part (``args`` ``{"path": "a"}`` unless given)."""
    body = {"name": name, "args": extra.pop("args", {"path": "a"})} | extra
    part: Obj = {"functionCall": body}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def answer(name: str = "read_file", response: Any = None, **extra: Any) -> Obj:
    """A ``functionResponse`` part."""
    body = {"name": name, "response": {"output": "42"} if response is None else response}
    return {"functionResponse": body | extra}


def results(*parts: Obj) -> Obj:
    return {"role": "user", "parts": list(parts)}


def path(endpoint: str, model_id: str, method: str = "generateContent") -> str:
    if endpoint == "aistudio":
        return f"/v1beta/models/{model_id}:{method}"
    if endpoint == "vertex":
        where = "projects/p/locations/us-central1/publishers/google/models"
        return f"/v1beta1/{where}/{model_id}:{method}"
    return f"/v1internal:{method}"


def wire(endpoint: str, model_id: str, request: Any) -> Any:
    """The body as `endpoint` takes it (Code Assist's wrapper around the request)."""
    if endpoint != "code-assist" or isinstance(request, bytes):
        return request
    return {"model": model_id, "project": "p", "user_prompt_id": "u-1", "request": request}


def post(
    endpoint: str,
    request: Any,
    model_id: str = "gemini-2.5-flash",
    *,
    method: str = "generateContent",
    query: str = "",
    strict: Strictness | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    app = create_gemini_native_app(endpoint, strict=strict)
    payload = wire(endpoint, model_id, request)
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    target = path(endpoint, model_id, method) + query
    return send(app, "POST", target, content=content, headers=headers or {})


def error_of(response: httpx.Response) -> Obj:
    """The ``error`` object of a refusal, checking the envelope's common keys."""
    assert response.headers["content-type"].startswith("application/json")
    error: Obj = response.json()["error"]
    assert error["code"] == response.status_code
    assert list(error)[:2] == ["code", "message"]
    return error
