-- 0007: the call ledger, for carriers whose API cannot say how a call ended or what
-- machine detection decided: what their webhooks said of each call (the status and verdict
-- of highest rank, the duration, Handset's call id), the second names calls are known by
-- (a vendor's request id and call id) and the names seen once (webhook event ids,
-- signature nonces). Pruned by age, as carrier_calls.
CREATE TABLE carrier_progress (
	carrier      TEXT NOT NULL,
	ref          TEXT NOT NULL,
	call_id      TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL DEFAULT '',
	status_rank  INTEGER NOT NULL DEFAULT 0,
	answered_by  TEXT NOT NULL DEFAULT '',
	verdict_rank INTEGER NOT NULL DEFAULT 0,
	duration_ms  INTEGER NOT NULL DEFAULT 0,
	declined     INTEGER NOT NULL DEFAULT 0,
	progress_at  TEXT NOT NULL,
	PRIMARY KEY (carrier, ref)
) STRICT;
CREATE INDEX carrier_progress_at ON carrier_progress (progress_at);

CREATE TABLE carrier_aliases (
	carrier    TEXT NOT NULL,
	alias      TEXT NOT NULL,
	ref        TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (carrier, alias)
) STRICT;
CREATE INDEX carrier_aliases_ref ON carrier_aliases (carrier, ref);
CREATE INDEX carrier_aliases_created ON carrier_aliases (created_at);

CREATE TABLE carrier_once (
	carrier TEXT NOT NULL,
	name    TEXT NOT NULL,
	seen_at TEXT NOT NULL,
	PRIMARY KEY (carrier, name)
) STRICT;
CREATE INDEX carrier_once_seen ON carrier_once (seen_at);
