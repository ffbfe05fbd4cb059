package fakedeepgram

import (
	"encoding/json"
	"math"
	"strings"
	"unicode"
)

// errorBody is Deepgram's JSON body for a refused request.
type errorBody struct {
	ErrCode   string `json:"err_code"`
	ErrMsg    string `json:"err_msg"`
	RequestID string `json:"request_id"`
}

// resultsMsg is a `Results` message.
type resultsMsg struct {
	Type         string      `json:"type"`
	ChannelIndex []int       `json:"channel_index"`
	Duration     float64     `json:"duration"`
	Start        float64     `json:"start"`
	IsFinal      bool        `json:"is_final"`
	SpeechFinal  bool        `json:"speech_final"`
	FromFinalize bool        `json:"from_finalize"`
	Channel      channel     `json:"channel"`
	Metadata     resultsMeta `json:"metadata"`
}

type channel struct {
	Alternatives []alternative `json:"alternatives"`
}

type alternative struct {
	Transcript string  `json:"transcript"`
	Confidence float64 `json:"confidence"`
	Words      []word  `json:"words"`
}

type word struct {
	Word           string  `json:"word"`
	Start          float64 `json:"start"`
	End            float64 `json:"end"`
	Confidence     float64 `json:"confidence"`
	PunctuatedWord string  `json:"punctuated_word"`
}

type modelInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
}

type resultsMeta struct {
	RequestID string    `json:"request_id"`
	ModelInfo modelInfo `json:"model_info"`
	ModelUUID string    `json:"model_uuid"`
}

// utteranceEndMsg is an `UtteranceEnd` message.
type utteranceEndMsg struct {
	Type        string  `json:"type"`
	Channel     []int   `json:"channel"`
	LastWordEnd float64 `json:"last_word_end"`
}

// speechStartedMsg is a `SpeechStarted` message (vad_events=true).
type speechStartedMsg struct {
	Type      string  `json:"type"`
	Channel   []int   `json:"channel"`
	Timestamp float64 `json:"timestamp"`
}

// metadataMsg is the `Metadata` message sent before a graceful close.
type metadataMsg struct {
	Type           string               `json:"type"`
	TransactionKey string               `json:"transaction_key"`
	RequestID      string               `json:"request_id"`
	SHA256         string               `json:"sha256"`
	Created        string               `json:"created"`
	Duration       float64              `json:"duration"`
	Channels       int                  `json:"channels"`
	Models         []string             `json:"models"`
	ModelInfo      map[string]modelInfo `json:"model_info"`
}

// controlMsg is any client text message; only its type matters.
type controlMsg struct {
	Type string `json:"type"`
}

// fakeModelUUID stands in for the model's id in results and metadata.
const fakeModelUUID = "00000000-0000-4000-8000-00000000fa4e"

// secs rounds a duration in seconds to the millisecond, as Deepgram's timestamps are.
func secs(samples int64, rate int) float64 {
	return math.Round(float64(samples)*1000/float64(rate)) / 1000
}

// buildWords spreads text's words evenly over [start, end] seconds.
func buildWords(text string, start, end float64) []word {
	fields := strings.Fields(text)
	words := make([]word, 0, len(fields))
	if len(fields) == 0 {
		return words
	}
	step := (end - start) / float64(len(fields))
	for i, f := range fields {
		bare := strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		words = append(words, word{
			Word:           bare,
			Start:          math.Round((start+step*float64(i))*1000) / 1000,
			End:            math.Round((start+step*float64(i+1))*1000) / 1000,
			Confidence:     0.99,
			PunctuatedWord: f,
		})
	}
	return words
}

// firstHalf returns the first half of text's words (rounded up), as an interim hears them.
func firstHalf(text string) string {
	fields := strings.Fields(text)
	return strings.Join(fields[:(len(fields)+1)/2], " ")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakedeepgram: marshal: " + err.Error()) // only fixed, valid types are marshalled
	}
	return b
}
