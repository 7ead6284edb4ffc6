"""This process's open descriptors, told apart: sockets, PostgreSQL's pooled connections, files.

The proxy under test runs in this process (uvicorn in a thread), so its descriptors are ours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

POSTGRES_PORT = 5432
#: A SQLite reader thread opened during the run rather than the warm-up: its connection holds
#: the database, its WAL and the shared-memory file (at most two reader threads).
SQLITE_READER_FILES = 3 * 2
#: The most connections the repair log's PostgreSQL pool keeps open (``max_size``).
POSTGRES_POOL = 4


@dataclass(frozen=True)
class Descriptors:
    sockets: int  # every socket but PostgreSQL's
    postgres: int  # connections to PostgreSQL (a pool grows under load, and stays grown)
    other: int  # files, pipes, event fds

    def idle_like(self, idle: Descriptors) -> bool:
        """Back to ``idle``: no socket more, the pool within its bound, no file beyond what a
        late reader thread opens."""
        return (
            self.sockets <= idle.sockets
            and self.postgres <= POSTGRES_POOL
            and self.other <= idle.other + SQLITE_READER_FILES
        )


def _postgres_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == POSTGRES_PORT:
                inodes.add(fields[9])
    return inodes


def descriptors() -> Descriptors:
    postgres = _postgres_inodes()
    sockets = pg = other = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
        if target.startswith("socket:["):
            if target[len("socket:[") : -1] in postgres:
                pg += 1
            else:
                sockets += 1
        else:
            other += 1
    return Descriptors(sockets, pg, other)
