package fakeopenaispeech

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/wav"
)

// speechFormats are the response_format values OpenAI documents; the fake produces the
// uncompressed two.
var (
	speechFormats   = []string{"mp3", "opus", "aac", "flac", "wav", "pcm"}
	producedFormats = []string{"pcm", "wav"}
)

// Speed limits OpenAI documents.
const (
	minSpeed = 0.25
	maxSpeed = 4.0
)

// maxSpeechBody bounds the JSON body read.
const maxSpeechBody = 1 << 20

// toneAmplitude is the peak of the ToneHz sine as a fraction of full scale (-3 dBFS, so
// -6 dBFS RMS: a cloud TTS voice's level, audiotest.TTSPeakFrameDBFS).
const toneAmplitude = 0.708

// speechRequest is the JSON body of POST /v1/audio/speech.
type speechRequest struct {
	Model          string          `json:"model"`
	Input          *string         `json:"input"`
	Voice          json.RawMessage `json:"voice"` // a name, or {"id": …} for a custom voice
	ResponseFormat *string         `json:"response_format"`
	Speed          *float64        `json:"speed"`
	StreamFormat   string          `json:"stream_format"`
}

// voiceName reads the voice member: a string, or an object's id.
func voiceName(raw json.RawMessage) string {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

// speech serves POST /v1/audio/speech.
func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	rec := &Speech{KeyPresent: r.Header.Get("Authorization") != "", Speed: 1}
	s.update(func() { s.speeches = append(s.speeches, rec) })
	defer s.update(func() { rec.Done = true })
	refuse := func(status int, e errorJSON) {
		s.update(func() { rec.Status = status })
		writeError(w, status, e)
	}
	if status, e, ok := s.checkKey(r); !ok {
		refuse(status, e)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSpeechBody+1))
	if err != nil || len(body) > maxSpeechBody {
		refuse(badRequest("Could not read the request body (at most 1 MiB).", "", ""))
		return
	}
	var req speechRequest
	if err := json.Unmarshal(body, &req); err != nil {
		refuse(badRequest("We could not parse the JSON body of your request: "+err.Error(), "", ""))
		return
	}
	format := "mp3" // OpenAI's default
	if req.ResponseFormat != nil {
		format = *req.ResponseFormat
	}
	s.update(func() {
		rec.Model, rec.Voice, rec.ResponseFormat = req.Model, voiceName(req.Voice), format
		if req.Input != nil {
			rec.Input = *req.Input
		}
		if req.Speed != nil {
			rec.Speed = *req.Speed
		}
	})
	if status, e, ok := s.validateSpeech(req, rec, format); !ok {
		refuse(status, e)
		return
	}

	magic := magicWords(rec.Input)
	if status, e, ok := faultFor(magic); ok {
		refuse(status, e)
		return
	}
	if magic[MagicFailOnce] && s.failOnce(rec.Input) {
		refuse(http.StatusInternalServerError, errServer)
		return
	}
	if magic[MagicHang] {
		if s.hold(r, &rec.Held) {
			s.update(func() { rec.Aborted = true })
			return
		}
		refuse(http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", "", ""))
		return
	}
	delay := s.opts.FirstByteDelay
	if magic[MagicSlow] {
		delay += s.opts.SlowDelay
	}
	if !s.wait(r, delay) {
		if r.Context().Err() != nil {
			s.update(func() { rec.Aborted = true })
			return
		}
		refuse(http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", "", ""))
		return
	}
	audio := s.encode(rec.Input, rec.Speed, format)
	s.log.Debug("fake speech", "model", rec.Model, "voice", rec.Voice, "format", format,
		"chars", utf8.RuneCountInString(rec.Input), "bytes", len(audio))
	s.update(func() { rec.Status = http.StatusOK })
	if !s.stream(w, r, rec, audio, magic) {
		s.update(func() { rec.Aborted = true })
	}
}

// validateSpeech checks a decoded request in the order OpenAI does: parameters, then model.
func (s *Server) validateSpeech(req speechRequest, rec *Speech, format string) (int, errorJSON, bool) {
	refuse := func(status int, e errorJSON) (int, errorJSON, bool) { return status, e, false }
	switch {
	case req.Model == "":
		return refuse(badRequest("you must provide a model parameter", "model", ""))
	case req.Input == nil:
		return refuse(badRequest("you must provide an input parameter", "input", ""))
	case strings.TrimSpace(*req.Input) == "":
		return refuse(badRequest("Invalid 'input': string too short. Expected a string with minimum length 1, but got an empty string instead.", "input", "string_below_min_length"))
	case utf8.RuneCountInString(*req.Input) > MaxInputChars:
		return refuse(badRequest(fmt.Sprintf("Invalid 'input': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", MaxInputChars, utf8.RuneCountInString(*req.Input)), "input", "string_above_max_length"))
	case rec.Voice == "":
		return refuse(badRequest("you must provide a voice parameter", "voice", ""))
	case len(s.opts.Voices) > 0 && !slices.Contains(s.opts.Voices, rec.Voice):
		return refuse(badRequest(fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", rec.Voice, quoteList(s.opts.Voices)), "voice", "invalid_value"))
	case !slices.Contains(speechFormats, format):
		return refuse(badRequest(fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", format, quoteList(speechFormats)), "response_format", "invalid_value"))
	case !slices.Contains(producedFormats, format):
		return refuse(badRequest(fmt.Sprintf("response_format '%s' is valid, but this fake produces only 'pcm' and 'wav'.", format), "response_format", "unsupported_value"))
	case rec.Speed < minSpeed || rec.Speed > maxSpeed:
		return refuse(badRequest(fmt.Sprintf("Invalid 'speed': %g is outside %g to %g.", rec.Speed, minSpeed, maxSpeed), "speed", "invalid_value"))
	case req.StreamFormat != "" && req.StreamFormat != "audio":
		return refuse(badRequest(fmt.Sprintf("stream_format '%s' is not supported by this fake (only 'audio').", req.StreamFormat), "stream_format", "unsupported_value"))
	}
	return s.checkModel(req.Model)
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

// encode renders the speech for input at speed as the bytes of the answer in format.
func (s *Server) encode(input string, speed float64, format string) []byte {
	d := s.duration(input, speed)
	var pcm []int16
	if s.opts.ToneHz > 0 {
		pcm = audiotest.Tone(PCMRate, s.opts.ToneHz, d, toneAmplitude)
	} else {
		h := fnv.New64a()
		_, _ = h.Write([]byte(input))
		// Normalised as a cloud TTS is: its loudest frames at -6 dBFS.
		pcm = audiotest.AtPeakFrame(audiotest.SpeechLike(PCMRate, d, int64(h.Sum64()>>1)), PCMRate, audiotest.TTSPeakFrameDBFS)
	}
	raw := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	if format != "wav" {
		return raw
	}
	var b bytes.Buffer
	_ = wav.Write(&b, PCM, raw) // cannot fail: PCM16 of even length at a positive rate
	return b.Bytes()
}

// contentTypes are the Content-Type headers of the answers the fake produces.
var contentTypes = map[string]string{"pcm": "audio/pcm", "wav": "audio/wav"}

// stream writes the audio in chunks with pauses, applying STALL and CUTOFF. It returns
// false if the client went away before the end.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, rec *Speech, audio []byte, magic map[string]bool) bool {
	w.Header().Set("Content-Type", contentTypes[rec.ResponseFormat])
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	chunk := s.opts.ChunkBytes
	if chunk <= 0 {
		chunk = PCM.Bytes(DefaultChunk)
	}
	limit := len(audio)
	if magic[MagicCutoff] {
		limit = len(audio) / 2
	}
	for off := 0; off < limit; {
		if off > 0 && !s.wait(r, s.opts.ChunkEvery) {
			return r.Context().Err() == nil
		}
		end := min(off+chunk, limit)
		n, err := w.Write(audio[off:end])
		s.update(func() { rec.Bytes += n })
		if err != nil {
			return false
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		off = end
		if magic[MagicStall] {
			return !s.hold(r, &rec.Held)
		}
	}
	if magic[MagicCutoff] {
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	}
	return true
}
