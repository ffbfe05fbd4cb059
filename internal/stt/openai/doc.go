// Package openai owns Handset's speech-to-text provider for any OpenAI-compatible
// transcription endpoint: OpenAI itself (whisper-1, gpt-4o-transcribe) and self-hosted
// engines that speak the same API, such as speaches (formerly faster-whisper-server).
//
// Wire protocol: POST {base}/audio/transcriptions as multipart/form-data with the parts
// model, language (when set), response_format=json and file (a 16-bit PCM WAV named
// utterance.wav), answered {"text": "…"}, as documented at
// https://platform.openai.com/docs/api-reference/audio/createTranscription. Errors are
// OpenAI's envelope {"error":{"message","type","param","code"}}
// (https://platform.openai.com/docs/guides/error-codes); FastAPI servers' {"detail": …}
// and plain-text bodies are read too. The key, when set, is sent as
// "Authorization: Bearer <key>"; self-hosted servers often need none.
//
// The API is batch, not streaming, so a stream buffers the caller's audio since the last
// Finalize (at most Options.MaxUtterance, keeping the newest), and Finalize hands that
// utterance to the stream's goroutine, which uploads it and delivers the text as one final
// voice.Transcript. There are no partial transcripts. Audio above 16 kHz is resampled to
// 16 kHz (what Whisper works at) before upload; 8 and 16 kHz go as they are. An utterance
// that is empty, shorter than 100 ms (OpenAI refuses those) or silent (no 20 ms frame at
// or above -45 dBFS) is not uploaded and yields an empty final transcript, which also keeps
// Whisper from hallucinating words into silence.
//
// Failures are *voice.ProviderError, logged when they happen. A transient one (5xx or a
// connection error) is retried once; when it persists, or for a timeout, quota or refused
// input, that utterance yields an empty final transcript and the stream carries on. A
// failure no later request can fix ends the stream: rejected credentials (401, 403) or a
// 404 (a wrong base URL or an unknown model); Results is then closed and Close returns
// the error.
package openai
