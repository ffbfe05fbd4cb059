-- Handset store, version 7: the call ledger, for carriers whose API cannot say how a call
-- ended or what machine detection decided: what their webhooks said of each call (the
-- status and verdict of highest rank, the duration, Handset's call id), the second names
-- calls are known by (a vendor's request id and call id) and the names seen once (webhook
-- event ids, signature nonces). Pruned by age, as carrier_calls.
CREATE TABLE carrier_progress (
	carrier      text NOT NULL,
	ref          text NOT NULL,
	call_id      text NOT NULL DEFAULT '',
	status       text NOT NULL DEFAULT '',
	status_rank  integer NOT NULL DEFAULT 0,
	answered_by  text NOT NULL DEFAULT '',
	verdict_rank integer NOT NULL DEFAULT 0,
	duration_ms  bigint NOT NULL DEFAULT 0,
	declined     boolean NOT NULL DEFAULT false,
	progress_at  timestamptz NOT NULL,
	PRIMARY KEY (carrier, ref)
);
CREATE INDEX carrier_progress_at ON carrier_progress (progress_at);

CREATE TABLE carrier_aliases (
	carrier    text NOT NULL,
	alias      text NOT NULL,
	ref        text NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (carrier, alias)
);
CREATE INDEX carrier_aliases_ref ON carrier_aliases (carrier, ref);
CREATE INDEX carrier_aliases_created ON carrier_aliases (created_at);

CREATE TABLE carrier_once (
	carrier text NOT NULL,
	name    text NOT NULL,
	seen_at timestamptz NOT NULL,
	PRIMARY KEY (carrier, name)
);
CREATE INDEX carrier_once_seen ON carrier_once (seen_at);
