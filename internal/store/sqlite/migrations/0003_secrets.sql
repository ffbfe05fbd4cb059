-- 0003: secrets Handset generates once and every node must share (the caller-hash secret,
-- the API token), so N nodes on one database agree without copying files between them.
CREATE TABLE secrets (
	name       TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	created_at TEXT NOT NULL
) STRICT;
