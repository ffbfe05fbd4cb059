// Package fakeretell plays Retell AI's side of its custom-LLM WebSocket ("LLM WebSocket")
// for tests of a server that acts as the LLM for Retell, such as Handset's agent bridge.
//
// # The protocol, as the fake implements it
//
// Retell is the client. For every call it dials the agent's configured URL with the call's
// id appended as the last path segment ({url}/{call_id}); Dial does the same. Every frame,
// both ways, is a text frame holding one JSON object. Frames from Retell are told apart by
// "interaction_type", frames from the server by "response_type".
//
// Opening. The server first sends an optional config event,
//
//	{"response_type":"config","config":{"auto_reconnect":true,"call_details":true}}
//
// and then the begin message: a response event with response_id 0. Its content is what the
// agent says first; empty content means the agent waits for the user. The fake treats id 0
// as asked for as soon as the socket opens, and records a violation at Close if no frame
// for it ever came.
//
// Call details. Only when the config asked for call_details does Retell send, at once,
// {"interaction_type":"call_details","call":{...}}, where call is the call object (call_id,
// agent_id, call_type, call_status, direction, from_number and to_number on phone calls,
// metadata, retell_llm_dynamic_variables). The fake sends it once, from Options.
//
// Keepalive. Only when the config set auto_reconnect does Retell send
// {"interaction_type":"ping_pong","timestamp":<ms since epoch>} every 2 s, and it expects
// ping_pong events back; after 5 s without one it drops the socket and dials again. Retell's
// reference servers echo the timestamp they were sent; the spec's wording is "when your
// server sent this event". The fake accepts either: an echo of one of its pings, or a time
// within half a minute of its own clock. Anything else (zero, seconds instead of
// milliseconds) is a violation. The fake pings every Options.PingEvery, starting at once,
// and when the server has sent no ping_pong for Options.PongTimeout it counts a missed pong
// and records a violation; unlike Retell it does not redial, so a test can inspect the call.
//
// Turns. Retell keeps the transcript of the whole call, an array of {"role":"agent"|"user",
// "content":...}, and sends all of it in every request:
//
//	update_only        transcript, optional "turntaking": "agent_turn" | "user_turn"; no reply
//	response_required  response_id, transcript: the server must answer
//	reminder_required  response_id, transcript: the user has been quiet; the server may
//	                   speak again
//
// Each new request carries a larger response_id, and asking again discards every earlier
// request: the server answers with response events for that id,
//
//	{"response_type":"response","response_id":3,"content":"I'm doing great, ","content_complete":false}
//	{"response_type":"response","response_id":3,"content":"thank you.","content_complete":true}
//
// where content is a delta appended to what came before and only the last frame sets
// content_complete. Optional fields: end_call (hang up once this reply has been spoken in
// full; dropped if the user cut the agent off), no_interruption_allowed, transfer_number,
// show_transferee_as_caller, digit_to_press. Frames for an id older than the latest one
// asked are stale: Retell drops them silently, and the fake counts them (Stale). A frame
// after content_complete for its id, or for an id never asked, is a violation. So is a
// frame Retell would reject: one whose response_id is not an integer, content not a string
// or content_complete not a boolean (Retell drops those silently too).
//
// Speech. The fake speaks an agent reply at Options.SpeakRate characters a second from the
// arrival of its first text, pausing whenever it has said everything received so far. That
// clock only matters when the user barges in (Interrupt): the agent's utterance in the
// transcript then holds only what had been heard, the rest of the reply is never added,
// and a new response_required goes out. Otherwise the fake assumes the user let the agent
// finish, so Say and Remind put all the text received for the current reply into the
// transcript before the user's words.
//
// Other events from the server are checked for their required fields and recorded
// (Received), with no further behaviour: agent_interrupt (interrupt_id, content,
// content_complete), update_agent (agent_config), metadata (metadata),
// tool_call_invocation (tool_call_id, name, arguments: a JSON string) and tool_call_result
// (tool_call_id, content, optional successful). Any other response_type, a frame that is
// not a JSON object, one without response_type, and a binary frame are violations.
//
// A Call is safe for concurrent use. Close ends the call as Retell does when the caller
// hangs up (a normal closure) and returns once the fake's goroutines have exited.
package fakeretell
