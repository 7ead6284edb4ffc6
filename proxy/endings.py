"""How the answer a client got ended: the relay says it, the request's state keeps it, the
repair log records it and filters on it. Neutral ground, so the relay (pure I/O) imports
nothing of the repair log."""

from __future__ import annotations

from typing import Literal, get_args

#: How the answer the client got ended: whole (the upstream's, or the proxy's own error), cut
#: because the upstream broke off or went silent past ``read_timeout`` after it had started,
#: or left unfinished because the client went away. None: not known (an unexpected error).
Ending = Literal["complete", "upstream_cut", "upstream_timeout", "client_gone"]
ENDINGS: tuple[str, ...] = get_args(Ending)
