-- Repair log, SQLite. created_at is fixed-width ISO-8601 UTC text, so it sorts as time.
-- Summary columns first, bodies last: a summary never reads a body's overflow pages.
CREATE TABLE records (
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
    rules BLOB NOT NULL,
    findings BLOB NOT NULL,
    upstream_error TEXT,
    received BLOB,
    forwarded BLOB
);
CREATE INDEX records_created ON records (created_at, id);
CREATE INDEX records_outcome ON records (outcome, created_at, id);
CREATE INDEX records_upstream ON records (upstream, created_at, id);
CREATE INDEX records_model ON records (model, created_at, id);
CREATE INDEX records_error_kind ON records (upstream_error_kind, created_at)
    WHERE upstream_error_kind IS NOT NULL;

-- One row per (record, rule that fired): the rule filter walks this key in page order.
CREATE TABLE record_rules (
    rule TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record_id TEXT NOT NULL,
    findings INTEGER NOT NULL,
    PRIMARY KEY (rule, created_at, record_id)
) WITHOUT ROWID;
CREATE INDEX record_rules_record ON record_rules (record_id);
