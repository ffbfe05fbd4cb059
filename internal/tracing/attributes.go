package tracing

// Attribute names. OpenTelemetry's semantic conventions have none for a phone call, so
// Handset's own carry the handset. prefix; the token counts and error.type are the
// conventions' own. docs/tracing.md lists them with their spans.
const (
	// the call span
	AttrCallID        = "handset.call.id"
	AttrCarrier       = "handset.call.carrier"
	AttrDirection     = "handset.call.direction"      // inbound or outbound
	AttrCallerHash    = "handset.call.caller_hash"    // the caller's number, keyed-hashed; never the number
	AttrCaller        = "handset.call.caller"         // withheld or unverified: why there is no caller hash
	AttrAttestation   = "handset.call.attestation"    // STIR/SHAKEN: A, B, C, none, failed
	AttrAgent         = "handset.call.agent"          // the agent runtime
	AttrSTT           = "handset.call.stt"            // the speech recognizer
	AttrTTS           = "handset.call.tts"            // the voice
	AttrEndReason     = "handset.call.end_reason"     // hangup, max_duration, …
	AttrTurns         = "handset.call.turns"          // caller turns
	AttrBrokenStage   = "handset.call.broken_stage"   // diagnose's first broken stage
	AttrEventsOmitted = "handset.call.events_omitted" // journal events past the trace's bound

	// the turn span (the figures are obs.Turns', in milliseconds to a tenth)
	AttrTurnNumber   = "handset.turn.number" // 0: the greeting
	AttrGreeting     = "handset.turn.greeting"
	AttrInterrupted  = "handset.turn.interrupted" // the caller barged in
	AttrEndpointMS   = "handset.turn.endpoint_ms"
	AttrAgentTTFTMS  = "handset.turn.agent_ttft_ms"
	AttrTTSTTFBMS    = "handset.turn.tts_ttfb_ms"
	AttrResponseMS   = "handset.turn.response_ms"
	AttrFillerMS     = "handset.turn.filler_ms"
	AttrOverheadMS   = "handset.turn.overhead_ms" // Handset's own share of the wait
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"

	// span events: a journal event's fields
	AttrEventKind    = "handset.event.kind"
	AttrEventName    = "handset.event.name"
	AttrEventMessage = "handset.event.message"
	AttrEventReason  = "handset.event.reason"
	AttrEventCount   = "handset.event.count"
	AttrErrorType    = "error.type"
)
