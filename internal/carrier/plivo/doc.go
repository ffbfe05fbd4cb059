// Package plivo is Plivo as a Handset carrier: the REST client (calls, queued requests,
// streams, numbers, applications, the account), the control API as a carrier.Carrier
// (Control), the V3 signature Plivo puts on every request it makes to Handset (Verifier:
// the signature, and each nonce once, since V3 has no timestamp), the routes that answer
// those requests (Hooks: the answer URL, call progress and machine-detection verdicts;
// ServeTransfer), the XML documents they answer with, and the audio stream's messages
// (frames.go).
//
// Plivo differs from Twilio where it matters: placing a call returns a request id
// (request_uuid) and the call's own id (CallUUID) arrives with its first callback, so
// Control follows a call through a Ledger (the calls' memory) that the callbacks feed
// (Callback.Record aliases the two ids); machine detection reports after the answer
// document was fetched, so a call under detection is held silent and its stream starts
// by REST once a person is heard; a number's calls go to the Plivo application it is
// linked to, so attaching a number moves every number on that application.
//
// plivosim is the fake Plivo the tests talk to; it shares no code with this package.
package plivo
