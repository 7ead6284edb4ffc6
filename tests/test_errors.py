"""One error tree (``proxy/errors.py``): every error class of the proxy is there and drawn in its
docstring, and :func:`~proxy.errors.render` answers each in the API's own shape."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import orjson
import pytest

from proxy import errors
from proxy.errors import (
    HistoryRejected,
    ProxyError,
    RequestTimeout,
    Unauthorized,
    UpstreamLacksApi,
    render,
)

PROXY = Path(__file__).parent.parent / "proxy"
#: The emulators are separate programs that import nothing of the proxy: their own errors stay.
OUTSIDE = {PROXY / "errors.py", *(PROXY / "emulator").rglob("*.py")}
ERROR_BASES = {"Exception", "BaseException", "ValueError", "LookupError", "RuntimeError"}
TREE_CLASSES = [
    value
    for value in vars(errors).values()
    if inspect.isclass(value)
    and issubclass(value, BaseException)
    and value.__module__ == errors.__name__
]


def _exception_classes(file: Path) -> list[str]:
    """Classes in ``file`` that derive from a builtin exception or from any ``…Error``."""
    found = []
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
            if bases & ERROR_BASES or any(base.endswith("Error") for base in bases):
                found.append(node.name)
    return found


def test_every_error_class_is_in_the_one_tree() -> None:
    strays = {
        str(file.relative_to(PROXY)): names
        for file in sorted(PROXY.rglob("*.py"))
        if file not in OUTSIDE and (names := _exception_classes(file))
    }
    assert strays == {}


def test_the_scan_sees_error_classes() -> None:
    """The scan finds what it looks for: the tree's own classes, of every kind of base."""
    found = set(_exception_classes(PROXY / "errors.py"))
    assert {"ProxyError", "UpstreamTimeout", "MalformedHistory", "ClientGone"} <= found


@pytest.mark.parametrize("cls", TREE_CLASSES, ids=lambda c: c.__name__)
def test_every_class_is_drawn_in_the_tree(cls: type[BaseException]) -> None:
    drawing = (errors.__doc__ or "").split("```")[1]
    names = {line.lstrip("│├└─ ").split(" ", 1)[0] for line in drawing.splitlines()}
    assert cls.__name__ in names


def test_render_sends_each_error_with_its_own_headers() -> None:
    status, headers, body = render(Unauthorized("wrong key"))
    assert status == 401
    assert (b"www-authenticate", b"Bearer") in headers
    assert (b"content-length", b"%d" % len(body)) in headers
    _, headers, _ = render(RequestTimeout("too slow"))
    assert (b"connection", b"close") in headers
    _, headers, _ = render(UpstreamLacksApi("no such API"))
    names = [name for name, _ in headers]
    assert names == [b"content-type", b"content-length", b"x-content-type-options"]  # issue 35


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (
            "openai",
            {
                "error": {
                    "message": "m",
                    "type": "invalid_request_error",
                    "param": "messages[1]",
                    "code": "invalid_tool_history",
                    "findings": [{"rule": "r"}],
                }
            },
        ),
        (
            "google",
            {
                "error": {
                    "code": 400,
                    "message": "m",
                    "status": "INVALID_ARGUMENT",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.BadRequest",
                            "fieldViolations": [{"field": "messages[1]", "description": "m"}],
                        }
                    ],
                    "findings": [{"rule": "r"}],
                }
            },
        ),
        (
            "anthropic",
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "m",
                    "findings": [{"rule": "r"}],
                },
            },
        ),
    ],
)
def test_an_error_body_is_in_the_apis_own_shape(shape: str, expected: object) -> None:
    error = HistoryRejected("m", param="messages[1]", findings=[{"rule": "r"}])
    _, _, body = render(error, shape)  # type: ignore[arg-type]
    assert orjson.loads(body) == expected


def test_a_5xx_without_an_anthropic_type_is_an_api_error() -> None:
    _, _, body = render(ProxyError("boom"), "anthropic")
    assert orjson.loads(body)["error"]["type"] == "api_error"
