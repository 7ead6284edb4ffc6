-- Repair log, PostgreSQL. Bodies are `json` (not jsonb): they keep the client's key order.
CREATE TABLE records (
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
    rules json NOT NULL,
    findings json NOT NULL,
    upstream_error text,
    received json,
    forwarded json
);
CREATE INDEX records_created ON records (created_at, id);
CREATE INDEX records_outcome ON records (outcome, created_at, id);
CREATE INDEX records_upstream ON records (upstream, created_at, id);
CREATE INDEX records_model ON records (model, created_at, id);
CREATE INDEX records_error_kind ON records (upstream_error_kind, created_at)
    WHERE upstream_error_kind IS NOT NULL;

-- One row per (record, rule that fired): the rule filter walks this key in page order.
CREATE TABLE record_rules (
    rule text NOT NULL,
    created_at timestamptz NOT NULL,
    record_id text NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    findings integer NOT NULL,
    PRIMARY KEY (rule, created_at, record_id)
);
CREATE INDEX record_rules_record ON record_rules (record_id);
