// Package phone owns the carrier-neutral half of a simulated caller on a media stream:
// it streams the caller's audio at real-time pace (silence when the caller says nothing),
// and plays what Handset sends as a carrier's playback buffer does: audio plays out in
// real time, a mark is reported when the audio queued before it has played, and a clear
// drops the buffer and reports the pending marks at once. Optionally (Options.Echo) the
// line echoes what played back into the caller's audio. Everything is recorded (Snapshot)
// or, with Options.Lean, only counted (Counters).
//
// The carrier's half is a Wire: the frames of one vendor's stream protocol. Each carrier's
// simulated caller (sim/twiliocaller, and the Telnyx and Plivo ones in their carrier trees)
// does the vendor's webhook and dial, then hands the open socket and its Wire to Run.
//
// The messages travel on a Transport: a WebSocket for those carriers, or for a SIP trunk
// (carrier/sip/sipsim) the call's RTP socket, handed to RunTransport. RTP carries audio and
// key presses only, so on such an audio-only line (Info.AudioOnly) nothing is marked or
// cleared, and the phone finds where each of Handset's replies ended in the audio it hears
// (ReplyEnded): what a person on the line would go by.
//
// A Call runs two goroutines, one reader and one writer; the playback buffer is a pure
// state machine driven by one clock timer. Everything stops on Hangup, on cancellation of
// the context given to Run, or when Handset closes the socket, and Done is closed only
// after both goroutines have returned.
package phone
