// Package plivo is Plivo as a Handset carrier: the REST client (calls, numbers,
// applications, the account), the control API as a carrier.Carrier, the V3 request
// signature Plivo puts on every request it makes to Handset, and the XML documents Handset
// answers Plivo's requests with.
//
// Plivo differs from Twilio where it matters: placing a call returns a request id
// (request_uuid) and the call's own id (CallUUID) arrives with its first callback, so
// Control follows a call through a Ledger fed by the callbacks; a number's calls go to the
// Plivo application it is linked to, so attaching a number moves every number on that
// application. plivosim is the fake Plivo the tests talk to.
package plivo
