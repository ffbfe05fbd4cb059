-- Handset store, version 2: what outbound calls, handoffs and deliveries need.
-- jobs.checkpoint: a handler's saved progress, so a reclaimed job resumes instead of
--   repeating a side effect; jobs.batch: jobs queued together (a dialer list);
--   jobs.node: the only owner that may claim the job (work on a live call).
-- calls.job_id: the job that placed an outbound call.
-- transcript_lines gains the foreign key SQLite always had (NOT VALID: rows written by
-- version 1 are not re-checked).

ALTER TABLE jobs ADD COLUMN checkpoint bytea;
ALTER TABLE jobs ADD COLUMN batch text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN node text NOT NULL DEFAULT '';
CREATE INDEX jobs_batch ON jobs (batch, id) WHERE batch <> '';

ALTER TABLE calls ADD COLUMN job_id bigint NOT NULL DEFAULT 0;

ALTER TABLE transcript_lines ADD CONSTRAINT transcript_lines_call_fk
	FOREIGN KEY (call_id) REFERENCES calls (id) ON DELETE CASCADE NOT VALID;
