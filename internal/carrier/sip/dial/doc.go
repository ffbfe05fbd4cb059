// Package dial places outbound calls through a SIP trunk and keeps their dialogs.
//
// Handset calls out by sending INVITE to the trunk (sip:+15551234567@trunk.example.com)
// with its SDP offer. The trunk answers with provisional responses while the call is
// routed and the phone rings (100 Trying, 180 Ringing, 183 Session Progress) and then one
// final response: 200 OK with the SDP answer when someone picks up, which Handset
// acknowledges with ACK, or a failure whose status says why (486 busy, 480 no answer, 404
// no such number…). Trunks usually challenge the INVITE (401, or 407 from a proxy) and the
// INVITE is sent again with a digest answer. Giving up before the answer is a CANCEL, to
// which the trunk answers the INVITE 487.
//
// The call then lives in a dialog: the requests inside it (BYE to hang up, REFER to
// transfer, NOTIFY reporting the transfer's progress, re-INVITE to refresh or change the
// session) name the dialog by Call-ID and tags. The requests the callee sends arrive at
// the trunk's server, which hands them to Dialogs.Handle before its own dialogs.
//
// Errors from Invite wrap one of the Err values below, so a caller can say why the call
// did not connect; *CallError carries the status itself.
package dial
