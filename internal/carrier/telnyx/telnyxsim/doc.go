// Package telnyxsim is a fake of Telnyx's Call Control v2 API for tests, simulate and
// bench: the REST API (calls and their commands, phone numbers, the Call Control
// Application, the balance) with Bearer-key checks, command_id idempotency and Telnyx's
// error bodies; a call state machine for inbound calls (parked until answered) and
// outbound calls (following each callee's outcome and answering-machine verdict); and
// every call event POSTed, signed with Ed25519 as Telnyx signs, to the application's
// webhook URL, retried while the answer is not 2xx.
//
// It is written from Telnyx's documented wire format alone and never imports the carrier
// package it fakes. What is not confirmed about Telnyx is an Option, not a silent guess.
// The media stream a call opens is handed to Options.OpenStream (the simulated caller).
package telnyxsim
