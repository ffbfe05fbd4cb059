-- 0006: what the dashboard lists calls by, without reading journals.
-- calls.summary_*: what a call's journal said of it when it ended (turns, barge-ins,
--   diagnose's first broken stage and its words); calls from before are left empty.
-- Indexes for each filter of the call list, newest first, and transcript_search: a
-- full-text index over transcript_lines (FTS5, case and accents folded), kept by triggers
-- and filled here from the lines already kept.

ALTER TABLE calls ADD COLUMN summary_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN summary_interrupted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN summary_stage TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN summary_problem TEXT NOT NULL DEFAULT '';

CREATE INDEX calls_outcome ON calls (outcome, started_at DESC, id DESC);
CREATE INDEX calls_carrier ON calls (carrier, started_at DESC, id DESC);
CREATE INDEX calls_live ON calls (started_at DESC, id DESC) WHERE ended_at IS NULL;
CREATE INDEX calls_broken ON calls (started_at DESC, id DESC) WHERE summary_stage <> '';

CREATE INDEX sessions_seen ON sessions (last_seen DESC, caller_hash DESC);

CREATE VIRTUAL TABLE transcript_search USING fts5 (
	text,
	content = 'transcript_lines',
	content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER transcript_search_insert AFTER INSERT ON transcript_lines BEGIN
	INSERT INTO transcript_search (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER transcript_search_delete AFTER DELETE ON transcript_lines BEGIN
	INSERT INTO transcript_search (transcript_search, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER transcript_search_update AFTER UPDATE OF text ON transcript_lines BEGIN
	INSERT INTO transcript_search (transcript_search, rowid, text) VALUES ('delete', old.id, old.text);
	INSERT INTO transcript_search (rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO transcript_search (transcript_search) VALUES ('rebuild');
-- The index's words, so that a search can spell out the words a prefix stands for.
CREATE VIRTUAL TABLE transcript_terms USING fts5vocab (transcript_search, 'row');
