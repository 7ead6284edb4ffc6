-- How the answer the client got ended (complete, upstream_cut, upstream_timeout, client_gone):
-- a status 200 alone does not say the client got the whole answer. Records written before
-- this column keep NULL (not known). Indexed like the other filters of GET /repairs.
ALTER TABLE records ADD COLUMN ending TEXT;
CREATE INDEX records_ending ON records (ending, created_at, id);
