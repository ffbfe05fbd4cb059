-- Handset store, version 6: what the dashboard lists calls by, without reading journals.
-- calls.summary_*: what a call's journal said of it when it ended (turns, barge-ins,
--   diagnose's first broken stage and its words); calls from before are left empty.
-- Indexes for each filter of the call list, newest first, and a full-text index over
-- transcript lines ('simple' configuration: every word, no stemming) on a stored tsvector. Accents are folded
-- by the unaccent extension when this database lets us create it (it is trusted: a
-- database owner may); without it handset_search_fold only lowercases.

ALTER TABLE calls
	ADD COLUMN summary_turns integer NOT NULL DEFAULT 0,
	ADD COLUMN summary_interrupted integer NOT NULL DEFAULT 0,
	ADD COLUMN summary_stage text NOT NULL DEFAULT '',
	ADD COLUMN summary_problem text NOT NULL DEFAULT '';

CREATE INDEX calls_outcome ON calls (outcome, started_at DESC, id DESC);
CREATE INDEX calls_carrier ON calls (carrier, started_at DESC, id DESC);
CREATE INDEX calls_live ON calls (started_at DESC, id DESC) WHERE ended_at IS NULL;
CREATE INDEX calls_broken ON calls (started_at DESC, id DESC) WHERE summary_stage <> '';

CREATE INDEX sessions_seen ON sessions (last_seen DESC, caller_hash DESC);

DO $fold$
DECLARE
	ext_schema text;
BEGIN
	BEGIN
		CREATE EXTENSION IF NOT EXISTS unaccent;
	EXCEPTION WHEN OTHERS THEN
		RAISE NOTICE 'unaccent is not available (%): transcript search will not fold accents', SQLERRM;
	END;
	SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'unaccent';
	IF ext_schema IS NULL THEN
		CREATE FUNCTION handset_search_fold(text) RETURNS text
			LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT lower($1)';
	ELSE
		EXECUTE format('CREATE FUNCTION handset_search_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS %L',
			format('SELECT lower(%I.unaccent(%L::regdictionary, $1))', ext_schema, quote_ident(ext_schema) || '.unaccent'));
	END IF;
END
$fold$;

-- Each line's words, kept beside it so that checking a call's lines needs no parsing.
ALTER TABLE transcript_lines ADD COLUMN search tsvector
	GENERATED ALWAYS AS (to_tsvector('simple', handset_search_fold(text))) STORED;
CREATE INDEX transcript_lines_search ON transcript_lines USING gin (search);
