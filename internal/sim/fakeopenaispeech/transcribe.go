package fakeopenaispeech

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/wav"
)

// transcriptionFormats are the response_format values of /audio/transcriptions.
var transcriptionFormats = []string{"json", "text", "srt", "verbose_json", "vtt"}

// fileFormats are the upload types OpenAI names; the fake decodes only WAV.
const fileFormats = "['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']"

// transcribe serves POST /v1/audio/transcriptions.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	rec := &Upload{KeyPresent: r.Header.Get("Authorization") != ""}
	s.update(func() { s.uploads = append(s.uploads, rec) })
	defer s.update(func() { rec.Done = true })
	refuse := func(status int, e errorJSON) {
		s.update(func() { rec.Status = status })
		writeError(w, status, e)
	}
	if status, e, ok := s.checkKey(r); !ok {
		refuse(status, e)
		return
	}
	form, status, e := readForm(w, r)
	if status != 0 {
		refuse(status, e)
		return
	}
	defer func() { _ = form.RemoveAll() }()
	value := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	s.update(func() {
		rec.Model, rec.Language, rec.Prompt = value("model"), value("language"), value("prompt")
		rec.ResponseFormat = value("response_format")
	})
	format := rec.ResponseFormat
	if format == "" {
		format = "json"
	}
	var fh *multipart.FileHeader
	if files := form.File["file"]; len(files) > 0 {
		fh = files[0]
		s.update(func() { rec.Filename, rec.ContentType = fh.Filename, fh.Header.Get("Content-Type") })
	}
	switch {
	case rec.Model == "":
		refuse(badRequest("you must provide a model parameter", "model", ""))
		return
	case fh == nil:
		refuse(badRequest("you must provide a file parameter", "file", ""))
		return
	case !slices.Contains(transcriptionFormats, format):
		refuse(badRequest(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json', 'text', 'srt', 'verbose_json', and 'vtt'.", format), "response_format", "invalid_value"))
		return
	}
	if status, e, ok := s.checkModel(rec.Model); !ok {
		refuse(status, e)
		return
	}
	f, pcm, status, e := readWAV(fh)
	if status != 0 {
		refuse(status, e)
		return
	}
	d := time.Duration(len(pcm)) * time.Second / time.Duration(f.Rate)
	s.update(func() {
		rec.Format, rec.Duration = f, d
		rec.PeakDBFS, rec.RMSDBFS = peakDBFS(pcm), audiotest.RMSDBFS(pcm)
		if s.opts.KeepAudio {
			rec.Samples = pcm
		}
	})
	if d < MinAudio {
		refuse(badRequest(fmt.Sprintf("Audio file is too short. Minimum audio length is %.1f seconds.", MinAudio.Seconds()), "file", "audio_too_short"))
		return
	}

	scripted := s.next()
	magic := magicWords(scripted)
	if status, e, ok := faultFor(magic); ok {
		refuse(status, e)
		return
	}
	delay := s.opts.TranscribeDelay
	if magic[MagicSlow] {
		delay += s.opts.SlowDelay
	}
	if magic[MagicHang] {
		if s.hold(r, &rec.Held) {
			s.update(func() { rec.Aborted = true })
			return
		}
		refuse(http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", "", ""))
		return
	}
	if !s.wait(r, delay) {
		if r.Context().Err() != nil {
			s.update(func() { rec.Aborted = true })
			return
		}
		refuse(http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", "", ""))
		return
	}
	text := withoutMagic(scripted)
	s.log.Debug("fake transcription", "model", rec.Model, "duration", d, "format", format, "text", text)
	s.update(func() { rec.Text, rec.Status = text, http.StatusOK })
	answerTranscript(w, format, text, rec.Language, d)
}

// readForm parses the multipart body, bounded by MaxFileBytes.
func readForm(w http.ResponseWriter, r *http.Request) (*multipart.Form, int, errorJSON) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFileBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		st, e := badRequest("The request must be multipart/form-data: "+err.Error(), "", "")
		return nil, st, e
	}
	form, err := mr.ReadForm(MaxFileBytes + 1<<20)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, newError(fmt.Sprintf("Maximum content size limit (%d) exceeded.", MaxFileBytes), "invalid_request_error", "file", "")
		}
		st, e := badRequest("Could not parse the multipart form: "+err.Error(), "", "")
		return nil, st, e
	}
	return form, 0, errorJSON{}
}

// readWAV checks the upload's name and decodes it to PCM samples.
func readWAV(fh *multipart.FileHeader) (audio.Format, []int16, int, errorJSON) {
	invalid := func(why string) (audio.Format, []int16, int, errorJSON) {
		st, e := badRequest("Invalid file format. Supported formats: "+fileFormats+" ("+why+")", "file", "invalid_value")
		return audio.Format{}, nil, st, e
	}
	ext := strings.ToLower(path.Ext(fh.Filename))
	if ext != ".wav" {
		return invalid(fmt.Sprintf("this fake decodes only .wav, got the file name %q", fh.Filename))
	}
	if fh.Size > MaxFileBytes {
		return audio.Format{}, nil, http.StatusRequestEntityTooLarge, newError(fmt.Sprintf("Maximum content size limit (%d) exceeded.", MaxFileBytes), "invalid_request_error", "file", "")
	}
	file, err := fh.Open()
	if err != nil {
		return invalid(err.Error())
	}
	defer file.Close()
	b, err := io.ReadAll(file)
	if err != nil {
		return invalid(err.Error())
	}
	f, data, err := wav.Read(bytes.NewReader(b))
	if err != nil {
		return invalid(err.Error())
	}
	return f, decode(f.Encoding, data), 0, errorJSON{}
}

// decode turns audio bytes of encoding enc into samples.
func decode(enc audio.Encoding, data []byte) []int16 {
	switch enc {
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(data)), data)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(data)), data)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return pcm
}

// peakDBFS is the loudest sample's level; -Inf for digital silence.
func peakDBFS(pcm []int16) float64 {
	peak := 0
	for _, v := range pcm {
		peak = max(peak, abs(int(v)))
	}
	return 20 * math.Log10(float64(peak)/32768)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// languageNames are the names verbose_json gives a few ISO-639-1 codes.
var languageNames = map[string]string{"en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian", "nl": "dutch"}

type segmentJSON struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int   `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogprob       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
	NoSpeechProb     float64 `json:"no_speech_prob"`
}

type verboseJSON struct {
	Task     string        `json:"task"`
	Language string        `json:"language"`
	Duration float64       `json:"duration"`
	Text     string        `json:"text"`
	Segments []segmentJSON `json:"segments"`
}

// answerTranscript writes text in the requested response_format.
func answerTranscript(w http.ResponseWriter, format, text, language string, d time.Duration) {
	switch format {
	case "json":
		writeJSON(w, http.StatusOK, struct {
			Text string `json:"text"`
		}{text})
	case "verbose_json":
		lang := languageNames[language]
		if lang == "" {
			lang = language
		}
		if lang == "" {
			lang = "english"
		}
		v := verboseJSON{Task: "transcribe", Language: lang, Duration: d.Seconds(), Text: text, Segments: []segmentJSON{}}
		if text != "" {
			v.Segments = append(v.Segments, segmentJSON{End: d.Seconds(), Text: " " + text, Tokens: []int{},
				AvgLogprob: -0.25, CompressionRatio: 1, NoSpeechProb: 0.01})
		}
		writeJSON(w, http.StatusOK, v)
	case "text":
		writeText(w, "text/plain; charset=utf-8", text+"\n")
	case "srt":
		writeText(w, "text/plain; charset=utf-8", fmt.Sprintf("1\n%s --> %s\n%s\n\n", stamp(0, ","), stamp(d, ","), text))
	case "vtt":
		writeText(w, "text/vtt; charset=utf-8", fmt.Sprintf("WEBVTT\n\n%s --> %s\n%s\n\n", stamp(0, "."), stamp(d, "."), text))
	}
}

func writeText(w http.ResponseWriter, ctype, body string) {
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
}

// stamp formats d as HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT).
func stamp(d time.Duration, sep string) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}
