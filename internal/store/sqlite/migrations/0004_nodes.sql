-- 0004: each node's heartbeat, so the calls of a node that died (kill -9, a lost machine)
-- are ended instead of staying live for ever.
CREATE TABLE nodes (
	id         TEXT PRIMARY KEY,
	started_at TEXT NOT NULL, -- its first heartbeat
	seen_at    TEXT NOT NULL  -- its latest heartbeat
) STRICT;
CREATE INDEX calls_running ON calls (node, started_at) WHERE ended_at IS NULL AND journal <> '';
