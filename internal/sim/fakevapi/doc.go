// Package fakevapi is a fake of Vapi's side of a custom LLM: a Vapi assistant whose model
// provider is "custom-llm", pointed at a server of one's own (here, Handset's agent
// bridge). A Call takes the caller's turns as Vapi does: it posts the conversation so far
// to the server, streams the reply, and, when the caller talks over it, drops the request
// and keeps in the conversation only what the caller heard. Tests read back every request
// it sent (Call.Requests) and the conversation it holds (Call.Messages).
//
// What it sends, and where Vapi documents it:
//
//   - The address. A custom LLM model has a url that Vapi hands its OpenAI client as the
//     base URL, so every turn is a POST to that url followed by /chat/completions; the
//     server examples Vapi publishes serve exactly that path. (Vapi's API reference,
//     https://api.vapi.ai/api, schema CustomLLMModel, field url; "Fine-tuned OpenAI
//     models", which sets the url to a /v1 base,
//     https://docs.vapi.ai/customization/custom-llm/fine-tuned-openai-models.)
//   - The credential. A server that wants one is given a "custom-llm" credential whose
//     apiKey Vapi sends in the Authorization header as a bearer token; without a
//     credential no Authorization header is sent. The model's own headers go with every
//     request but cannot replace Authorization. ("Connecting Your Custom LLM to Vapi: A
//     Comprehensive Guide", section Authentication,
//     https://docs.vapi.ai/customization/custom-llm/using-your-server; API reference,
//     CustomLLMCredential; changelog of 2025-07-18, https://docs.vapi.ai/whats-new/2025/7/18.)
//   - The body. OpenAI's chat fields: model, messages (the model's system message first,
//     then the conversation), temperature (Vapi's default 0), max_tokens (the model's
//     maxTokens, default 250) and stream, which is always true: Vapi asks servers to
//     stream. ("Custom LLM Tool Calling Integration",
//     https://docs.vapi.ai/customization/tool-calling-integration; "Custom LLM",
//     https://docs.vapi.ai/assistants/custom-llm; API reference, CustomLLMModel's
//     temperature and maxTokens.) Sending temperature and maxTokens as these two OpenAI
//     fields is this fake's reading of those pages, which name the settings but show no
//     request.
//   - Metadata and the call. The model's metadataSendMode decides the rest: "off" sends
//     the chat fields alone; "variable", the default, adds the assistant's metadata as a
//     "metadata" field; "destructured" puts the metadata's fields at the top level
//     instead. Both of the latter also send the call, phoneNumber and customer objects.
//     (API reference, CustomLLMModel's metadataSendMode.) A metadata field named like a
//     chat field is not sent here: what Vapi does then is not documented.
//   - The call object: id, orgId, type (inboundPhoneCall, outboundPhoneCall, webCall),
//     status, assistantId, phoneNumberId, the provider and transport of a phone call, its
//     times, its metadata, and customer {number, name, extension}: the person on the
//     line, whom a web call does not have. (API reference, schemas Call and
//     CreateCustomerDTO.) What Vapi puts in
//     customer.number for a caller who withheld their number is not documented; a test
//     chooses.
//   - The reply. Vapi reads the server's answer as OpenAI's stream: events
//     "data: <chat.completion.chunk>" whose choices' deltas carry the text, ending with
//     "data: [DONE]". ("Custom LLM Tool Calling Integration", its streaming server.) A
//     server that answers with JSON instead of an event stream is an error here.
//   - The timeout. The model's timeoutSeconds, default 20 s, is how long Vapi waits for
//     the server without a token. (API reference, CustomLLMModel's timeoutSeconds.)
//   - The first message. An assistant's firstMessage is spoken by Vapi itself when the
//     call starts; it is an assistant message of the conversation from then on. (API
//     reference, the Assistant schema's firstMessage.)
//   - Barge-in. The assistant's stopSpeakingPlan stops it speaking when the caller talks
//     over it. ("Speech Configuration", Stop Speaking Plan,
//     https://docs.vapi.ai/customization/speech-configuration.) That Vapi then aborts
//     the HTTP request of the reply, and that its next request carries the assistant's
//     message only as far as it was spoken, is not on those pages: it is how OpenAI's
//     clients cancel a stream, and how a voice platform keeps its transcript, and this
//     fake does both.
//
// Not modelled: tools and tool calls, knowledge bases, OAuth2 credentials, requests that
// do not stream, and anything Vapi does with the reply after reading it.
package fakevapi
