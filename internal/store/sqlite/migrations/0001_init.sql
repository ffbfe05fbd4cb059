-- 0001: calls, transcripts, sessions and jobs.
-- Times are TEXT in UTC, fixed width with microseconds ("2031-03-14T15:09:26.535897Z"), so
-- they sort and compare as strings. NULL is the zero time.

CREATE TABLE calls (
	id          TEXT PRIMARY KEY,
	carrier     TEXT NOT NULL DEFAULT '',
	carrier_ref TEXT NOT NULL DEFAULT '',
	direction   TEXT NOT NULL DEFAULT '',
	from_number TEXT NOT NULL DEFAULT '',
	to_number   TEXT NOT NULL DEFAULT '',
	caller_hash TEXT NOT NULL DEFAULT '',
	agent       TEXT NOT NULL DEFAULT '',
	node        TEXT NOT NULL DEFAULT '',
	started_at  TEXT NOT NULL,
	ended_at    TEXT,
	outcome     TEXT NOT NULL DEFAULT '',
	journal     TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX calls_started ON calls (started_at DESC, id DESC);
CREATE INDEX calls_caller_started ON calls (caller_hash, started_at DESC, id DESC);

CREATE TABLE transcript_lines (
	id          INTEGER PRIMARY KEY,
	call_id     TEXT NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
	turn        INTEGER NOT NULL,
	role        TEXT NOT NULL,
	text        TEXT NOT NULL,
	at          TEXT NOT NULL,
	interrupted INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX transcript_lines_call ON transcript_lines (call_id, turn, at, id);

CREATE TABLE sessions (
	caller_hash TEXT PRIMARY KEY,
	session_key TEXT NOT NULL DEFAULT '',
	first_seen  TEXT NOT NULL,
	last_seen   TEXT NOT NULL,
	calls       INTEGER NOT NULL,
	last_call   TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX sessions_key ON sessions (session_key, last_seen DESC) WHERE session_key <> '';

CREATE TABLE jobs (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	kind         TEXT NOT NULL,
	payload      BLOB,
	state        TEXT NOT NULL CHECK (state IN ('pending', 'running', 'completed', 'failed')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	max_attempts INTEGER NOT NULL,
	run_at       TEXT NOT NULL,
	lease_owner  TEXT NOT NULL DEFAULT '',
	lease_until  TEXT,
	result       BLOB,
	error        TEXT NOT NULL DEFAULT '',
	dedupe_key   TEXT UNIQUE, -- NULL when none: NULLs never collide
	version      INTEGER NOT NULL,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
) STRICT;

-- Claim looks for due pending jobs and for running jobs whose lease expired.
CREATE INDEX jobs_pending ON jobs (run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_running ON jobs (lease_until) WHERE state = 'running';
CREATE INDEX jobs_state_kind ON jobs (state, kind, id);
