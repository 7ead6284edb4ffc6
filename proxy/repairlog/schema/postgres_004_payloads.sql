-- Content-addressed bodies and conversations (issue 23). A record's bodies are skeletons whose
-- history items, chunks of item digests and large values are stored once in `payloads`
-- (see proxy/repairlog/payloads.py). `last_used` (Unix seconds) is the newest time a record
-- referenced a payload, kept to within an hour (a write bumps it when it is older than that):
-- retention deletes the payloads last used over an hour before the oldest record kept.
-- Rows written before this migration keep their bodies whole (`packed` NULL).
ALTER TABLE records
    ADD COLUMN conversation text,
    ADD COLUMN client text,
    ADD COLUMN repeat_of text,
    ADD COLUMN repeats integer NOT NULL DEFAULT 0,
    ADD COLUMN last_seen timestamptz,
    ADD COLUMN finding_key text,
    ADD COLUMN packed integer;
CREATE INDEX records_conversation ON records (conversation, finding_key, created_at)
    WHERE conversation IS NOT NULL;

-- Later turns of a conversation that repeat a first record's findings at the same places: the
-- same columns, no summary indexes (they are counted on their first record, which is listed).
CREATE TABLE turns (
    id text PRIMARY KEY,
    created_at timestamptz NOT NULL,
    upstream text NOT NULL,
    model text,
    path text NOT NULL,
    stream boolean NOT NULL,
    outcome text NOT NULL,
    upstream_status integer,
    upstream_error_kind text,
    request_id text,
    duration_ms double precision,
    sanitize_ms double precision,
    upstream_ms double precision,
    status integer,
    proxy_error text,
    ending text,
    conversation text NOT NULL,
    client text,
    repeat_of text NOT NULL,
    repeats integer NOT NULL DEFAULT 0,
    last_seen timestamptz,
    finding_key text,
    packed integer,
    rules json NOT NULL,
    findings json NOT NULL,
    upstream_error text,
    received json,
    forwarded json,
    attempts json
);
CREATE INDEX turns_conversation ON turns (conversation, created_at, id);

CREATE TABLE payloads (
    digest bytea PRIMARY KEY,
    last_used bigint NOT NULL,
    body bytea NOT NULL
);
