-- 0002: what outbound calls, handoffs and deliveries need from jobs and calls.
-- jobs.checkpoint: a handler's saved progress, so a reclaimed job resumes instead of
--   repeating a side effect; jobs.batch: jobs queued together (a dialer list);
--   jobs.node: the only owner that may claim the job (work on a live call).
-- calls.job_id: the job that placed an outbound call.

ALTER TABLE jobs ADD COLUMN checkpoint BLOB;
ALTER TABLE jobs ADD COLUMN batch TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_batch ON jobs (batch, id) WHERE batch <> '';

ALTER TABLE calls ADD COLUMN job_id INTEGER NOT NULL DEFAULT 0;
