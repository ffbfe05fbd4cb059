// Package fakeopenaispeech owns a fake of the OpenAI audio API for tests, `handset simulate`
// and the load generator: speech-to-text (POST /v1/audio/transcriptions) and text-to-speech
// (POST /v1/audio/speech), the two endpoints self-hosted engines such as speaches
// (faster-whisper-server) and Kokoro-FastAPI also answer.
//
// It speaks the real wire format, as documented at
// https://platform.openai.com/docs/api-reference/audio/createTranscription and
// https://platform.openai.com/docs/api-reference/audio/createSpeech: a multipart/form-data
// upload (file, model, language, prompt, response_format) answered {"text": …} (or the
// verbose_json, text, srt and vtt variants); a JSON speech request (model, input, voice,
// response_format, speed) answered with streamed audio, "pcm" being raw 24 kHz 16-bit
// little-endian mono; and OpenAI's error envelope {"error":{"message","type","param","code"}}
// (https://platform.openai.com/docs/guides/error-codes).
//
// It cannot really transcribe: each transcription request that passes validation takes the
// next text from a script the test sets (Options.Transcripts, Server.Script), and the upload
// is recorded (model, language, duration, peak and RMS level) for assertions. The uploaded
// file must be a WAV (any encoding package wav reads). Its speech is synthetic but real
// sound: audiotest.SpeechLike (or a steady tone) lasting Options.MsPerChar per character,
// streamed in chunks with small pauses.
//
// Magic words script faults, matched as whole words (case-sensitive) like package
// fakeopenai's: in a transcription script entry, or in the input text of a speech request.
//
//	FAIL500   500 server_error
//	FAIL400   400 invalid_request_error
//	FAIL429   429 rate_limit_exceeded
//	FAILONCE  speech only: the first request with this exact input answers 500
//	SLOW      first byte (or the transcription answer) after Options.SlowDelay (2 s)
//	HANG      send nothing at all; hold until the client goes away or Close
//	STALL     speech only: stream the first chunk, then hold until the client goes away
//	CUTOFF    speech only: stream half the audio, then drop the connection
//
// A scripted transcript's magic words are left out of the text it answers.
package fakeopenaispeech
