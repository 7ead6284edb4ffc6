-- The status the client got and the proxy's own error (a 502 when the upstream is down), and
-- the attempts of a request that was repaired and retried after the upstream refused it.
ALTER TABLE records ADD COLUMN status INTEGER;
ALTER TABLE records ADD COLUMN proxy_error TEXT;
ALTER TABLE records ADD COLUMN attempts BLOB;
