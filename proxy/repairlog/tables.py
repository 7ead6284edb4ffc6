"""The repair log's tables, declared once, and the migrations that build them in either SQL
dialect (SQLite, PostgreSQL).

A record's columns are :data:`RECORD`, each with the schema version that added it: version 1
created ``records`` with the first ones, later versions added the rest, and version 4 created
``turns`` with them all. Both tables put the summary columns first and the bodies last (SQLite
then never reads a body's overflow pages for a summary). A migration's statements are what the
``schema/*.sql`` files of earlier releases held, so a database they built upgrades in place and
one built anew has the same tables. Pure: the backends run the statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DialectName = Literal["sqlite", "postgres"]

#: Each column kind as the dialect stores it. SQLite's times are fixed-width ISO-8601 UTC text,
#: which sorts as time; PostgreSQL's JSON is ``json`` (not ``jsonb``): it keeps the key order.
TYPES: dict[DialectName, dict[str, str]] = {
    "sqlite": {
        "text": "TEXT",
        "time": "TEXT",
        "flag": "INTEGER",
        "int": "INTEGER",
        "bigint": "INTEGER",
        "real": "REAL",
        "json": "BLOB",
        "bytes": "BLOB",
    },
    "postgres": {
        "text": "text",
        "time": "timestamptz",
        "flag": "boolean",
        "int": "integer",
        "bigint": "bigint",
        "real": "double precision",
        "json": "json",
        "bytes": "bytea",
    },
}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # a key of TYPES' rows
    since: int  # the schema version that added it
    rest: str = ""  # PRIMARY KEY, NOT NULL, DEFAULT …


#: A stored record's columns (``records`` and ``turns``), summary first and bodies last: name,
#: kind (a key of :data:`TYPES`' rows), the schema version that added it, constraints. Version 2
#: added the status the client got, the proxy's own error (a 502 when the upstream is down) and
#: the attempts of a request repaired and retried after the upstream refused it; 3, how the
#: answer ended (complete, upstream_cut, upstream_timeout, client_gone: a status 200 alone does
#: not say the client got it whole); 4, conversations (a repeat points at its first record,
#: which counts its repeats) and content-addressed bodies (``packed``); 5, the client key that
#: sent it (``owner``, its digest: issue 35). Rows written before a
#: version keep NULL in its columns (not known; bodies whole).
RECORD_COLUMNS = """
    id                   text  1  PRIMARY KEY
    created_at           time  1  NOT NULL
    upstream             text  1  NOT NULL
    model                text  1
    path                 text  1  NOT NULL
    stream               flag  1  NOT NULL
    outcome              text  1  NOT NULL
    upstream_status      int   1
    upstream_error_kind  text  1
    request_id           text  1
    duration_ms          real  1
    sanitize_ms          real  1
    upstream_ms          real  1
    status               int   2
    proxy_error          text  2
    ending               text  3
    conversation         text  4
    client               text  4
    repeat_of            text  4
    repeats              int   4  NOT NULL DEFAULT 0
    last_seen            time  4
    finding_key          text  4
    packed               int   4
    owner                text  5
    rules                json  1  NOT NULL
    findings             json  1  NOT NULL
    upstream_error       text  1
    received             json  1
    forwarded            json  1
    attempts             json  2
"""


def _columns(table: str) -> tuple[Column, ...]:
    found = []
    for line in table.strip().splitlines():
        name, kind, since, *rest = line.split(maxsplit=3)
        found.append(Column(name, kind, int(since), *rest))
    return tuple(found)


RECORD = _columns(RECORD_COLUMNS)
#: What a turn must have that a record may lack: it is a repeat, within a conversation.
TURN_REQUIRES = frozenset({"conversation", "repeat_of"})

#: One row per (record, rule that fired): the rule filter walks this key in page order.
RECORD_RULES = """CREATE TABLE record_rules (
    rule {text} NOT NULL,
    created_at {time} NOT NULL,
    record_id {text} NOT NULL{cascade},
    findings {int} NOT NULL,
    PRIMARY KEY (rule, created_at, record_id)
){without_rowid}"""

#: The log's own secrets (issue 35): ``capture``, the HMAC key of the digests
#: ``capture = "redacted"`` stores, made once by the first process that opens the log and shared
#: by every one (every replica) that opens it after.
SECRETS = """CREATE TABLE secrets (
    name {text} PRIMARY KEY,
    value {bytes} NOT NULL
)"""

#: Content-addressed payloads (issue 23): a record's bodies are skeletons whose history items,
#: chunks of item digests and large values are stored once here (:mod:`.payloads`).
#: ``last_used`` (Unix seconds) is the newest time a record referenced a payload, kept to within
#: an hour: retention deletes the payloads last used over an hour before the oldest record kept.
PAYLOADS = """CREATE TABLE payloads (
    digest {bytes} PRIMARY KEY,
    last_used {bigint} NOT NULL,
    body {bytes} NOT NULL
)"""


def _column(column: Column, types: dict[str, str], required: frozenset[str] = frozenset()) -> str:
    rest = "NOT NULL" if column.name in required else column.rest
    return " ".join(filter(None, [column.name, types[column.kind], rest]))


def _create(table: str, version: int, dialect: DialectName, required: frozenset[str]) -> str:
    types = TYPES[dialect]
    lines = [_column(c, types, required) for c in RECORD if c.since <= version]
    return f"CREATE TABLE {table} (\n    " + ",\n    ".join(lines) + "\n)"


def _added(version: int, dialect: DialectName) -> list[str]:
    types = TYPES[dialect]
    return [
        f"ALTER TABLE records ADD COLUMN {_column(c, types)}" for c in RECORD if c.since == version
    ]


def _steps(dialect: DialectName) -> list[list[str]]:
    """Each version's statements, in order (version ``n`` is ``[n - 1]``)."""
    sqlite = dialect == "sqlite"
    marks = {
        **TYPES[dialect],
        # SQLite deletes a record's rules itself (its foreign keys are off by default).
        "cascade": "" if sqlite else " REFERENCES records (id) ON DELETE CASCADE",
        "without_rowid": " WITHOUT ROWID" if sqlite else "",
    }
    return [
        [
            _create("records", 1, dialect, frozenset()),
            "CREATE INDEX records_created ON records (created_at, id)",
            "CREATE INDEX records_outcome ON records (outcome, created_at, id)",
            "CREATE INDEX records_upstream ON records (upstream, created_at, id)",
            "CREATE INDEX records_model ON records (model, created_at, id)",
            "CREATE INDEX records_error_kind ON records (upstream_error_kind, created_at)"
            " WHERE upstream_error_kind IS NOT NULL",
            RECORD_RULES.format_map(marks),
            "CREATE INDEX record_rules_record ON record_rules (record_id)",
        ],
        _added(2, dialect),
        # Indexed like the other filters of GET /repairs.
        [*_added(3, dialect), "CREATE INDEX records_ending ON records (ending, created_at, id)"],
        [
            *_added(4, dialect),
            "CREATE INDEX records_conversation ON records (conversation, finding_key, created_at)"
            " WHERE conversation IS NOT NULL",
            # Later turns of a conversation that repeat a first record's findings at the same
            # places: no summary indexes (they are counted on their first record, listed).
            _create("turns", 4, dialect, TURN_REQUIRES),
            "CREATE INDEX turns_conversation ON turns (conversation, created_at, id)",
            PAYLOADS.format_map(marks),
        ],
        [
            # A client key reads only its own records (issue 35).
            *_added(5, dialect),
            f"ALTER TABLE turns ADD COLUMN owner {marks['text']}",
            "CREATE INDEX records_owner ON records (owner, created_at, id) WHERE owner IS NOT NULL",
            SECRETS.format_map(marks),
        ],
    ]


def migrations(dialect: DialectName) -> list[tuple[int, str]]:
    """Each schema version and the SQL script that migrates the version before it to it."""
    return [
        (number, "".join(f"{statement};\n" for statement in statements))
        for number, statements in enumerate(_steps(dialect), start=1)
    ]
