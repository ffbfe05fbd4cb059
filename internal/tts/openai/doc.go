// Package openai owns Handset's text-to-speech provider for any OpenAI-compatible speech
// endpoint: OpenAI itself (tts-1, tts-1-hd, gpt-4o-mini-tts) and self-hosted engines that
// speak the same API, such as Kokoro-FastAPI and speaches.
//
// Wire protocol: POST {base}/audio/speech with the JSON body
// {"model","input","voice","response_format":"pcm"}, answered with the audio as it is
// made: raw 24 kHz 16-bit little-endian mono samples, as documented at
// https://platform.openai.com/docs/api-reference/audio/createSpeech. Errors are OpenAI's
// envelope {"error":{"message","type","param","code"}}
// (https://platform.openai.com/docs/guides/error-codes); FastAPI servers' {"detail": …}
// bodies are read too. The key, when set, is sent as "Authorization: Bearer <key>".
//
// The body is streamed as it arrives, resampled from 24 kHz to the caller's rate and
// encoded to the caller's encoding, with a sample split across two network reads put back
// together. A transient failure (5xx or a connection error) before any audio is retried
// once; cancelling the context or closing the reader stops the request.
//
// A server must honour response_format "pcm" at 24 kHz: OpenAI and Kokoro-FastAPI do.
// speaches answers "pcm" at the voice's own rate unless asked for another; an answer
// labelled as a compressed or WAV type is refused as a protocol error rather than played
// as noise.
package openai
