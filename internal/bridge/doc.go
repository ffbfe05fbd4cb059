// Package bridge is the agent bridge: an OpenAI-compatible chat completions endpoint
// (POST /v1/chat/completions, streaming or not, and GET /v1/models) in front of the agent
// runtime Handset is configured with, for voice platforms that bring their own speech
// (LiveKit Agents, Pipecat, Vapi, Retell) and want a Hermes or OpenClaw agent as their
// language model.
//
// What Handset does for its own calls it does for theirs:
//
//   - Sessions. A request names its conversation by the X-Handset-Session header, its
//     metadata (handset_session, session_id, session, room, room_name), Vapi's call id, or
//     OpenAI's user field, in that order. The runtime files it under "bridge-<id>", keyed
//     through the same session key settings as calls. A caller's number (Vapi's
//     call.customer.number, metadata caller_number) is only ever sent as Handset's keyed
//     hash, and so is an id that is itself a phone number.
//   - Stopping. A client that disconnects cancels the turn, and the runtime's run with it.
//   - Errors. A runtime's failure, or an error text it tried to pass off as its reply,
//     reaches the client as an OpenAI-shaped error, never as content to speak.
//   - Messages. System (and developer) messages become the instructions, sent the way the
//     runtime sends its own prompt; tool and function messages and non-text content parts
//     are left out, with a log line counting them.
//
// The bridge has its own bearer token (HANDSET_BRIDGE_TOKEN), separate from the API's.
package bridge
