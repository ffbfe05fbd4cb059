// Package obs owns what Handset records about a call as it happens: the per-call event
// journal (<data dir>/calls/<call id>/events.jsonl, one JSON object a line) and the
// reader that turns a journal back into events for trace and diagnose.
package obs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Event types, exactly as INTERFACE.md names them (add more in the same style).
const (
	CallStart         = "call.start"
	MediaFirstIn      = "media.first_in"
	MediaMalformed    = "media.malformed"
	VADSpeechStart    = "vad.speech_start"
	VADSpeechEnd      = "vad.speech_end"
	STTPartial        = "stt.partial"
	STTFinal          = "stt.final"
	STTError          = "stt.error" // a recognizer failed: name, kind, message
	TurnCommit        = "turn.commit"
	AgentRequest      = "agent.request"
	AgentFirstToken   = "agent.first_token"
	AgentProgress     = "agent.progress"
	AgentDone         = "agent.done"
	AgentError        = "agent.error"
	TTSRequest        = "tts.request"
	TTSFirstByte      = "tts.first_byte"
	TTSError          = "tts.error"           // a voice failed a sentence: turn, name, kind, message
	PlayoutFirstAudio = "playout.first_audio" // kind "filler" when the turn's first audio is the long-turn filler
	// PlayoutReplyAudio: in a turn the filler began, the reply's own first audio reached
	// the carrier (the agent's words, or the error message when the turn failed).
	PlayoutReplyAudio = "playout.reply_audio"
	PlayoutMark       = "playout.mark"
	PlayoutQueued     = "playout.queued" // the turn's audio is fully queued
	PlayoutDone       = "playout.done"   // the carrier played the turn to its end
	TimerFired        = "timer"          // a turn-taking timer fired: name, count (its generation)
	Filler            = "filler"
	BargeInPending    = "barge_in.pending"
	BargeIn           = "barge_in"
	BargeInResumed    = "barge_in.resumed"
	Clear             = "clear"
	TurnInterrupted   = "turn.interrupted"
	DTMF              = "dtmf"
	TransferRequested = "transfer.requested" // name: the number asked for
	TransferRefused   = "transfer.refused"   // name, message: why (not on the allow-list, …)
	TransferStarted   = "transfer.started"   // name: the carrier is asked to dial it
	TransferFailed    = "transfer.failed"    // name, message
	HandoffRequested  = "handoff.requested"  // name: the channel
	HandoffDone       = "handoff.done"       // name
	HandoffFailed     = "handoff.failed"     // name, message
	// EchoPath: the call's echo path as learned (name "echo" with delay_ms,
	// return_loss_db and, once the canceller has learned the line, cancelled_db; or
	// "none": no echo detected); again when it changes.
	EchoPath = "echo.path"
	// EchoSuppressed: in this turn, count 20 ms frames of audible inbound audio were
	// taken as the agent's echo, the loudest at level_db. A caller who talked over the
	// agent without interrupting it shows up here.
	EchoSuppressed = "echo.suppressed"
	// CallGoodbye: a stopping server's drain timeout ran out; text is the goodbye the call
	// says before it ends (empty: it ends at once).
	CallGoodbye = "call.goodbye"
	// STTLost: no recognizer has heard the caller for a second; the turn machine is told,
	// and the engine keeps trying to open one.
	STTLost = "stt.lost"
	// STTRecovered: a recognizer hears the caller again after a failure: name (which one),
	// count (the opens it took), audio_ms (held caller audio replayed to it).
	STTRecovered = "stt.recovered"
	// TTSFallback: a sentence was spoken by the fallback voice: turn, name.
	TTSFallback = "tts.fallback"
	// TTSLost: no voice could speak a sentence; the caller never heard it, and neither the
	// agent's history nor the transcript holds it: turn, text.
	TTSLost = "tts.lost"
	// RecordingStart: the call is being recorded (HANDSET_RECORD): name is the file in the
	// call's folder; its sample 0 is this event's moment, the call's start.
	RecordingStart = "recording.start"
	// RecordingStop: the recording is complete: audio_ms is its length.
	RecordingStop = "recording.stop"
	// RecordingError: writing the recording failed (a full disk, …): it stops there and the
	// call goes on: message.
	RecordingError = "recording.error"
	CallEnd        = "call.end"
	// CarrierSignal: a signalling message of a carrier whose calls Handset sets up itself
	// (a SIP trunk): name is the message ("INVITE", "180 Ringing", "200 OK", "ACK", "BYE",
	// "CANCEL"), kind "in" or "out", reason why a call ended on a BYE or a failure status.
	CarrierSignal = "carrier.signal"
	// MediaFirstOut: the first audio packet left for the caller (a SIP trunk's first RTP
	// packet; carriers with a media stream show it as playout.first_audio).
	MediaFirstOut = "media.first_out"
)

// Event is one journal line. Fields beyond ts, ms and type are set only where they apply.
type Event struct {
	TS   time.Time `json:"ts"`
	MS   int64     `json:"ms"`
	Type string    `json:"type"`
	Turn int       `json:"turn,omitempty"`

	Text    string `json:"text,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Name    string `json:"name,omitempty"`
	Digit   string `json:"digit,omitempty"`
	Count   int    `json:"count,omitempty"`

	// AudioMS (vad.speech_start, vad.speech_end) is where in the caller's audio the VAD
	// decided: milliseconds of inbound audio processed, the end of the deciding frame. Against
	// ms it shows how far processing lagged the line.
	AudioMS int64 `json:"audio_ms,omitempty"`

	// agent.done: the turn's tokens, as the runtime reported them (absent: not reported)
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`

	// echo.path and echo.suppressed
	DelayMS      float64 `json:"delay_ms,omitempty"`
	ReturnLossDB float64 `json:"return_loss_db,omitempty"`
	CancelledDB  float64 `json:"cancelled_db,omitempty"` // echo.path: the canceller's depth
	LevelDB      float64 `json:"level_db,omitempty"`

	// call.start only
	Carrier    string `json:"carrier,omitempty"`
	Direction  string `json:"direction,omitempty"`
	CallerHash string `json:"caller_hash,omitempty"`
	// Caller says why a call has no caller hash: "withheld" (no number) or "unverified"
	// (the number's attestation is below HANDSET_CALLER_MEMORY_ATTESTATION).
	Caller string `json:"caller,omitempty"`
	// Attestation is the STIR/SHAKEN verification of the caller's number: A, B, C, none, failed.
	Attestation string `json:"attestation,omitempty"`
	Agent       string `json:"agent,omitempty"`
	STT         string `json:"stt,omitempty"`
	TTS         string `json:"tts,omitempty"`
	// TurnConfig (call.start) is the turn-taking configuration, so a journal can be replayed.
	TurnConfig json.RawMessage `json:"turn_config,omitempty"`
}

// Journal appends events for one call. Each event is written with a single write call as
// it happens, so a crash loses at most the event in flight. Safe for concurrent use.
type Journal struct {
	mu    sync.Mutex // guards following
	w     io.Writer
	f     *os.File // nil when writing to a plain writer
	start time.Time
	err   error // first write error; later writes are skipped
	tees  []func(Event)
	// The line being written, encoded from a copy of its event held here: an event
	// handed to the encoder as a value or a fresh pointer would be copied to the heap
	// first, a few hundred bytes of garbage for every event of every call.
	event Event
	line  bytes.Buffer
	enc   *json.Encoder
}

// Tee also hands every later event to fn (a live view such as the browser call page or
// the dashboard, a trace exporter), after it is written, in the order Tee was called. fn
// runs under the journal's lock, so it must only enqueue.
func (j *Journal) Tee(fn func(Event)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.tees = append(j.tees, fn)
}

// Dir is where a call's journal lives under the data dir.
func Dir(dataDir, callID string) string { return filepath.Join(dataDir, "calls", callID) }

// Create opens <dataDir>/calls/<callID>/events.jsonl for appending; start anchors "ms".
func Create(dataDir, callID string, start time.Time) (*Journal, error) {
	dir := Dir(dataDir, callID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return newJournal(f, f, start), nil
}

// NewWriter journals to w (tests, simulate).
func NewWriter(w io.Writer, start time.Time) *Journal { return newJournal(w, nil, start) }

func newJournal(w io.Writer, f *os.File, start time.Time) *Journal {
	j := &Journal{w: w, f: f, start: start}
	j.enc = json.NewEncoder(&j.line)
	return j
}

// Discard is a journal that records nothing.
func Discard() *Journal { return NewWriter(io.Discard, time.Now()) }

// Record stamps e with ts and ms at now, bounds its text (see bound) and appends it.
func (j *Journal) Record(now time.Time, e Event) {
	if j == nil {
		return
	}
	bound(&e)
	e.TS = now.UTC()
	e.MS = now.Sub(j.start).Milliseconds()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	j.event = e
	j.line.Reset()
	if err := j.enc.Encode(&j.event); err != nil { // the line with its newline
		j.err = err
		return
	}
	_, j.err = j.w.Write(j.line.Bytes())
	for _, tee := range j.tees {
		tee(e)
	}
}

// saidText are the events whose text is what was said or heard: it keeps up to
// voice.TranscriptLimit bytes. Every other text an event carries (an error answer, a
// number or reason a request gave, a partial transcript) keeps voice.EchoLimit.
var saidText = map[string]bool{
	STTFinal: true, noteDropped: true, TurnCommit: true, AgentDone: true, TTSRequest: true, BargeIn: true,
}

// bound clips the text fields of e, most of which can come from outside (a caller's
// words, a runtime's error answer, a request's fields), so no input makes a journal line
// much longer than its limits. Nothing is allocated unless something is cut.
func bound(e *Event) {
	limit := voice.EchoLimit
	if saidText[e.Type] {
		limit = voice.TranscriptLimit
	}
	e.Text = voice.Clip(e.Text, limit)
	for _, f := range []*string{&e.Kind, &e.Message, &e.Reason, &e.Name, &e.Digit,
		&e.Carrier, &e.Direction, &e.CallerHash, &e.Agent, &e.STT, &e.TTS} {
		*f = voice.Clip(*f, voice.EchoLimit)
	}
}

// Err returns the first write error, if any.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Close syncs and closes the file. Idempotent; a nil Journal has nothing to close.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return j.err
	}
	err := errors.Join(j.f.Sync(), j.f.Close())
	j.f = nil
	if j.err == nil {
		j.err = err
	}
	return err
}

// ReadEvents parses a journal. A torn last line (crash mid-write) is skipped, not fatal;
// a malformed line elsewhere is an error naming its line number.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	var pendingErr error
	for n := 1; sc.Scan(); n++ {
		if pendingErr != nil {
			return out, pendingErr
		}
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			pendingErr = fmt.Errorf("journal line %d: %w", n, err)
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ReadFile parses the journal at path.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadEvents(f)
}
