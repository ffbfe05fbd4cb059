// Package twiliocaller owns a simulated Twilio that places a call into Handset exactly as
// Twilio does: it posts the signed voice webhook, reads the TwiML <Connect><Stream>, opens
// the signed Media Streams WebSocket, streams the caller's audio at real-time pace (silence
// when the caller says nothing), and records what Handset sends back while emulating
// Twilio's playback buffer: audio plays out in real time, marks come back when the audio
// queued before them has played, and clear drops the buffer and returns pending marks at
// once. Optionally (Options.Echo) the line echoes: what played comes back to Handset in the
// caller's audio, delayed and quieter, as on a real phone line.
//
// It is shared by Handset's whole-call tests, `handset simulate` and `handset bench`; the
// last sets Options.Lean, which keeps counters of the audio (Counters) instead of the
// audio itself, so a call's memory does not grow with its length.
//
// Wire protocol implemented (facts from the Twilio docs):
//   - voice webhook: https://www.twilio.com/docs/voice/twiml (form POST, CallStatus=ringing)
//   - request signing: https://www.twilio.com/docs/usage/webhooks/webhooks-security
//   - <Connect><Stream> and <Parameter>: https://www.twilio.com/docs/voice/twiml/stream
//   - stream messages: https://www.twilio.com/docs/voice/media-streams/websocket-messages
//
// A Call runs two goroutines, one reader and one writer; the playback buffer is a pure
// state machine driven by one clock timer. Everything stops on Hangup, on cancellation of
// the context given to Dial, or when Handset closes the socket, and Done is closed only
// after both goroutines have returned.
package twiliocaller
