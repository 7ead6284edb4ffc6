"""Reading an upstream's refusal before deciding whether to retry, without losing a byte of it.

A refusal is read (up to a bound) before anything reaches the client; when no retry follows,
:class:`Replayed` hands the client exactly what the upstream sent: the bytes already read,
then the rest of the body as it arrives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from proxy.relay.base import RawHeaders, UpstreamResponse


class Replayed:
    """An upstream response whose first bytes were read already (an ``UpstreamResponse``): the
    bytes read (``head``), then the ``rest`` of the body as it arrives. Without a ``rest``, an
    answer the proxy rewrote whole: ``head`` is all of its body, under the ``status`` and
    ``headers`` given (the upstream's by default); closing it closes the upstream's."""

    __slots__ = ("_response", "_rest", "head", "headers", "status")

    def __init__(
        self,
        response: UpstreamResponse,
        head: bytes,
        rest: AsyncIterator[bytes] | None = None,
        *,
        status: int | None = None,
        headers: RawHeaders | None = None,
    ) -> None:
        self._response = response
        self._rest = rest
        self.head = head
        self.status = response.status if status is None else status
        self.headers: RawHeaders = response.headers if headers is None else headers

    @property
    def body(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        if self.head:
            yield self.head
        if self._rest is not None:
            async for chunk in self._rest:
                yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


async def read_head(response: UpstreamResponse, limit: int) -> tuple[Replayed, bool]:
    """Read up to ``limit`` bytes of ``response``; the response to relay instead, and whether
    the whole body fit (only a whole error is worth classifying for a retry)."""
    chunks = response.body.__aiter__()
    head = bytearray()
    complete = False
    while len(head) <= limit:
        try:
            head += await anext(chunks)
        except StopAsyncIteration:
            complete = True
            break
    return Replayed(response, bytes(head), chunks), complete
