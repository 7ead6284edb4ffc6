-- Content-addressed bodies and conversations (issue 23). A record's bodies are skeletons whose
-- history items, chunks of item digests and large values are stored once in `payloads`
-- (see proxy/repairlog/payloads.py). `last_used` (Unix seconds) is the newest time a record
-- referenced a payload, kept to within an hour (a write bumps it when it is older than that):
-- retention deletes the payloads last used over an hour before the oldest record kept.
-- Rows written before this migration keep their bodies whole (`packed` NULL).
ALTER TABLE records ADD COLUMN conversation TEXT;
ALTER TABLE records ADD COLUMN client TEXT;
ALTER TABLE records ADD COLUMN repeat_of TEXT;
ALTER TABLE records ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN last_seen TEXT;
ALTER TABLE records ADD COLUMN finding_key TEXT;
ALTER TABLE records ADD COLUMN packed INTEGER;
CREATE INDEX records_conversation ON records (conversation, finding_key, created_at)
    WHERE conversation IS NOT NULL;

-- Later turns of a conversation that repeat a first record's findings at the same places: the
-- same columns, no summary indexes (they are counted on their first record, which is listed).
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    upstream TEXT NOT NULL,
    model TEXT,
    path TEXT NOT NULL,
    stream INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    upstream_status INTEGER,
    upstream_error_kind TEXT,
    request_id TEXT,
    duration_ms REAL,
    sanitize_ms REAL,
    upstream_ms REAL,
    status INTEGER,
    proxy_error TEXT,
    ending TEXT,
    conversation TEXT NOT NULL,
    client TEXT,
    repeat_of TEXT NOT NULL,
    repeats INTEGER NOT NULL DEFAULT 0,
    last_seen TEXT,
    finding_key TEXT,
    packed INTEGER,
    rules BLOB NOT NULL,
    findings BLOB NOT NULL,
    upstream_error TEXT,
    received BLOB,
    forwarded BLOB,
    attempts BLOB
);
CREATE INDEX turns_conversation ON turns (conversation, created_at, id);

CREATE TABLE payloads (
    digest BLOB PRIMARY KEY,
    last_used INTEGER NOT NULL,
    body BLOB NOT NULL
);
