-- Handset store, version 3: secrets Handset generates once and every node must share (the
-- caller-hash secret, the API token), so N nodes on one database agree without copying
-- files between them.
CREATE TABLE secrets (
	name       text PRIMARY KEY,
	value      text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
