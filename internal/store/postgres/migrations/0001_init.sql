-- Handset store, version 1: calls, transcripts, sessions and jobs.
-- Times are timestamptz (microseconds, UTC); a zero Go time is NULL where it means "not yet".

CREATE TABLE calls (
	id          text PRIMARY KEY,
	carrier     text NOT NULL DEFAULT '',
	carrier_ref text NOT NULL DEFAULT '',
	direction   text NOT NULL DEFAULT '',
	from_number text NOT NULL DEFAULT '',
	to_number   text NOT NULL DEFAULT '',
	caller_hash text NOT NULL DEFAULT '',
	agent       text NOT NULL DEFAULT '',
	node        text NOT NULL DEFAULT '',
	started_at  timestamptz NOT NULL,
	ended_at    timestamptz,
	outcome     text NOT NULL DEFAULT '',
	journal     text NOT NULL DEFAULT ''
);
CREATE INDEX calls_started ON calls (started_at DESC, id DESC);
CREATE INDEX calls_caller ON calls (caller_hash, started_at DESC, id DESC);

CREATE TABLE transcript_lines (
	seq         bigserial PRIMARY KEY,
	call_id     text NOT NULL,
	turn        integer NOT NULL,
	role        text NOT NULL,
	text        text NOT NULL,
	at          timestamptz NOT NULL,
	interrupted boolean NOT NULL DEFAULT false
);
CREATE INDEX transcript_lines_call ON transcript_lines (call_id, turn, at, seq);

CREATE TABLE sessions (
	caller_hash text PRIMARY KEY,
	session_key text NOT NULL,
	first_seen  timestamptz NOT NULL,
	last_seen   timestamptz NOT NULL,
	calls       integer NOT NULL,
	last_call   text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_key ON sessions (session_key, last_seen DESC);

CREATE TABLE jobs (
	id           bigserial PRIMARY KEY,
	kind         text NOT NULL,
	payload      bytea,
	state        text NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'failed')),
	attempts     integer NOT NULL DEFAULT 0,
	max_attempts integer NOT NULL,
	run_at       timestamptz NOT NULL,
	lease_owner  text NOT NULL DEFAULT '',
	lease_until  timestamptz,
	result       bytea,
	error        text NOT NULL DEFAULT '',
	dedupe_key   text UNIQUE, -- NULL when the job has none
	version      bigint NOT NULL DEFAULT 1,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL
);
-- What Claim scans: due pending jobs by run_at, and running jobs by lease expiry.
CREATE INDEX jobs_pending ON jobs (run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_running ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_state_kind ON jobs (state, kind, id);
