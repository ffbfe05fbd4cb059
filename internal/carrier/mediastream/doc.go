// Package mediastream is the plumbing every carrier's media stream shares, whatever the
// vendor's wire format: one-time stream tokens that carry what the call's webhook said to
// the socket that opens later; the rules that make a repeated webhook harmless and a
// stream open once across a cluster (through carrier.Memory); the URL a request was
// signed over; a zero-allocation JSON member scanner and writer for the per-frame path;
// and the bookkeeping a bidirectional stream needs whatever the carrier guarantees:
// frames that arrive before the stream's start (PreStart), marks echoed out of step or not
// at all (MarkBook), and media out of order (Reorder).
//
// It knows no vendor: a carrier package (internal/carrier/twilio, …) owns its messages
// and uses these pieces to read and write them.
package mediastream
