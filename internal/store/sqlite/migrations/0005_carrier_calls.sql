-- 0004: each carrier call's first webhook answer, so a retried webhook gets the same answer
-- and a replayed one is refused once the call's media stream has opened. Pruned by age.
CREATE TABLE carrier_calls (
	carrier     TEXT NOT NULL,
	ref         TEXT NOT NULL,
	request_key TEXT NOT NULL DEFAULT '',
	answer      BLOB NOT NULL,
	created_at  TEXT NOT NULL,
	streamed_at TEXT,
	PRIMARY KEY (carrier, ref)
) STRICT;
CREATE INDEX carrier_calls_created ON carrier_calls (created_at);
