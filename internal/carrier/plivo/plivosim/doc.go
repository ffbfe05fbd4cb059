// Package plivosim is a fake Plivo for tests: its REST API under /v1/Account/{auth_id}/
// (calls, queued requests, numbers, applications, the account) with HTTP basic auth and
// Plivo's {"api_id","error"} answers, calls that ring, are answered by people or machines,
// are busy or fail, and every request it makes to Handset (answer URL, ring and hangup
// callbacks, machine-detection verdicts, a transfer's new XML) signed with signature V3
// and a random nonce.
//
// It is written from Plivo's documented wire behaviour alone and shares no code with
// internal/carrier/plivo, which it tests. Where Plivo's behaviour is not confirmed the
// fake makes it an option.
package plivosim
