-- Handset store, version 4: each node's heartbeat, so the calls of a node that died (kill -9,
-- a lost machine) are ended by the nodes still running instead of staying live for ever.
CREATE TABLE nodes (
	id         text PRIMARY KEY,
	started_at timestamptz NOT NULL, -- its first heartbeat
	seen_at    timestamptz NOT NULL  -- its latest heartbeat
);
-- What the lost-call sweep scans: calls running with their media on a node.
CREATE INDEX calls_running ON calls (node, started_at) WHERE ended_at IS NULL AND journal <> '';
