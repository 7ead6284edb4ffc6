"""An upstream without the wire API a request asked for: its bare 404 becomes an error that
names the upstream (issue 25 item 5).

``POST /v1/responses`` routed to an upstream that has no Responses API (DeepSeek, most
OpenAI-compatible hosts) gets that host's 404 for an unknown path: ``Not Found``, an HTML page
or nothing, which reads like the proxy's own fault. The 404 is read (bounded) and, unless it
speaks about something the request names (a model, a stored response, a conversation, an
item: the API exists and refused a reference), replaced by an error in the API's own shape
saying which upstream lacks which API and how to route elsewhere.
"""

from __future__ import annotations

import re

from proxy.api.replay import Replayed, read_head
from proxy.core.wire import Wire
from proxy.errors import UpstreamLacksApi, render
from proxy.relay.base import UpstreamResponse

#: A route-miss 404 is short; one longer than this is relayed as it is.
READ_BYTES = 64 * 1024
#: Words of a 404 about a reference in the request, from an upstream that has the API.
_ABOUT_THE_REQUEST = re.compile(
    rb"model|resp_|conv_|msg_|previous_response|conversation|item|file", re.IGNORECASE
)


def lacks_api_error(upstream: str, url: str, wire: Wire) -> UpstreamLacksApi:
    api = wire.name.capitalize()
    return UpstreamLacksApi(
        f"Upstream '{upstream}' has no {api} API: POST {url} answered 404 Not Found. Send "
        f"this request to an upstream that serves {wire.path} (a path prefix /NAME/v1, the "
        "x-toolcall-guard-upstream header, or a model it serves)"
        + (", or use /v1/chat/completions." if wire.name == "responses" else ".")
    )


async def explained(
    response: UpstreamResponse, upstream: str, url: str, wire: Wire
) -> UpstreamResponse:
    """``response`` (a 404 to ``url``), or the proxy's error naming ``upstream`` instead."""
    replayed, complete = await read_head(response, READ_BYTES)
    if not complete or _ABOUT_THE_REQUEST.search(replayed.head):
        return replayed  # the API is there and refused something the request names
    status, headers, data = render(lacks_api_error(upstream, url, wire), wire.error_shape)
    return Replayed(response, data, status=status, headers=headers)
