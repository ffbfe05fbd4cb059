-- Handset store, version 4: each carrier call's first webhook answer, so a retried webhook
-- gets the same answer from any node and a replayed one is refused once the call's media
-- stream has opened. Pruned by age.
CREATE TABLE carrier_calls (
	carrier     text NOT NULL,
	ref         text NOT NULL,
	request_key text NOT NULL DEFAULT '',
	answer      bytea NOT NULL,
	created_at  timestamptz NOT NULL,
	streamed_at timestamptz,
	PRIMARY KEY (carrier, ref)
);
CREATE INDEX carrier_calls_created ON carrier_calls (created_at);
