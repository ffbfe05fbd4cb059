// Package voice is Handset's domain vocabulary and the contracts its providers implement:
// a carrier Leg, a streaming Recognizer (STT), a Synthesizer (TTS) and an Agent runtime,
// plus call identity, end reasons and the classified ProviderError every provider returns.
// It imports only audio, so every other package can depend on it.
package voice
