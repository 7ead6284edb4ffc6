"""The repair-log viewer: static files under ``/ui`` that talk to the ``/repairs`` JSON API.

No build step and no third-party assets: the files in ``proxy/ui/`` are served as they are,
under a strict content-security policy (no inline script or style, nothing from elsewhere).
The page itself needs no auth; it asks for the admin token when the API answers 401/403.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request, Response

UI_DIR = Path(__file__).resolve().parent.parent / "ui"

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

# One flat directory of plain names: nothing that could climb out of it or hide a file.
_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(?:html|js|css|svg)$")

router = APIRouter(include_in_schema=False)


@lru_cache(maxsize=64)
def _load(name: str, mtime_ns: int) -> tuple[bytes, str]:
    """The file's bytes and a strong ETag; keyed on mtime so an edited file is re-read."""
    data = (UI_DIR / name).read_bytes()
    return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _serve(name: str, request: Request) -> Response:
    path = UI_DIR / name
    if not _ASSET_NAME.match(name) or not path.is_file():
        return Response(b"not found\n", status_code=404, media_type="text/plain")
    data, etag = _load(name, path.stat().st_mtime_ns)
    headers = {
        "cache-control": "no-cache",  # names carry no version: revalidate, 304 when unchanged
        "etag": etag,
        "content-security-policy": CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=CONTENT_TYPES[path.suffix], headers=headers)


@router.get("/ui")
@router.get("/ui/")
def index(request: Request) -> Response:
    """The viewer's single page; the fragment (``#/r/<id>``) picks the view."""
    return _serve("index.html", request)


@router.get("/ui/{asset}")
def asset(asset: str, request: Request) -> Response:
    """A static file of the viewer (scripts, styles)."""
    return _serve(asset, request)
