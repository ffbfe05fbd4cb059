package fakeopenaispeech_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds waits that must end promptly.
const hangGuard = 10 * time.Second

func start(t *testing.T, o fakeopenaispeech.Options) *fakeopenaispeech.Server {
	t.Helper()
	s, err := fakeopenaispeech.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// apiError is OpenAI's error envelope as a client reads it.
type apiError struct {
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// decodeError checks that body is exactly OpenAI's envelope and returns it.
func decodeError(t *testing.T, body []byte) apiError {
	t.Helper()
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error body %s lacks error.%s", body, k)
		}
	}
	var e apiError
	_ = json.Unmarshal(body, &e)
	if e.Error == nil || e.Error.Message == "" {
		t.Fatalf("error body %s has no message", body)
	}
	return e
}

// wavFile returns a WAV of pcm at rate.
func wavFile(t *testing.T, f audio.Format, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := wav.Write(&b, f, data); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pcmBytes(pcm []int16) []byte {
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

func pcmSamples(b []byte) []int16 {
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm
}

// part is one multipart field; file parts have a filename.
type part struct {
	name, filename, ctype string
	body                  []byte
}

// post sends a multipart transcription request and returns the status and body.
func post(t *testing.T, s *fakeopenaispeech.Server, key string, parts ...part) (int, http.Header, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="`+p.filename+`"`)
			h.Set("Content-Type", p.ctype)
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
		}
		w, _ := mw.CreatePart(h)
		_, _ = w.Write(p.body)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/audio/transcriptions", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, s, req)
}

func do(t *testing.T, s *fakeopenaispeech.Server, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp.StatusCode, resp.Header, body
}

// speak sends a speech request with body v (marshalled unless it is a string).
func speak(t *testing.T, s *fakeopenaispeech.Server, key string, v any) (int, http.Header, []byte) {
	t.Helper()
	var body []byte
	if str, ok := v.(string); ok {
		body = []byte(str)
	} else {
		body, _ = json.Marshal(v)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/audio/speech", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, s, req)
}

var telephoneSpeech = audiotest.Mulaw(audiotest.SpeechLike(8000, 1500*time.Millisecond, 3))

func fileOf(t *testing.T) part {
	return part{name: "file", filename: "utterance.wav", ctype: "audio/wav", body: wavFile(t, audio.Telephone, telephoneSpeech)}
}

func TestStartURL(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT/v1", s.URL())
	}
	if fakeopenaispeech.New(fakeopenaispeech.Options{}).URL() != "" {
		t.Error("a handler-only server has a URL")
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/audio/voices", nil)
	status, _, body := do(t, s, req)
	if e := decodeError(t, body); status != http.StatusNotFound || !strings.Contains(e.Error.Message, "Invalid URL") {
		t.Errorf("unknown path: %d %s", status, body)
	}
}

func TestKey(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{Key: "sk-right-key-1234"})
	for _, key := range []string{"", "sk-wrong-key-9876"} {
		status, _, body := post(t, s, key, part{name: "model", body: []byte("whisper-1")}, fileOf(t))
		e := decodeError(t, body)
		if status != http.StatusUnauthorized || e.Error.Code == nil || *e.Error.Code != "invalid_api_key" || e.Error.Type != "invalid_request_error" {
			t.Errorf("transcription with key %q: %d %s", key, status, body)
		}
		if strings.Contains(string(body), "9876") && !strings.Contains(string(body), "*") {
			t.Errorf("wrong key echoed unmasked: %s", body)
		}
		status, _, body = speak(t, s, key, map[string]any{"model": "tts-1", "input": "Hi.", "voice": "alloy", "response_format": "pcm"})
		if e := decodeError(t, body); status != http.StatusUnauthorized || *e.Error.Code != "invalid_api_key" {
			t.Errorf("speech with key %q: %d %s", key, status, body)
		}
	}
	if status, _, body := post(t, s, "sk-right-key-1234", part{name: "model", body: []byte("whisper-1")}, fileOf(t)); status != http.StatusOK {
		t.Errorf("right key: %d %s", status, body)
	}
	ups := s.Uploads()
	if len(ups) != 3 || ups[0].KeyPresent || !ups[1].KeyPresent || ups[2].Status != 200 {
		t.Errorf("uploads = %+v", ups)
	}
}

func TestTranscriptionScriptAndRecord(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{Transcripts: []string{"Hello there."}, KeepAudio: true})
	s.Script("Second one.")
	if s.Remaining() != 2 {
		t.Fatalf("Remaining() = %d", s.Remaining())
	}
	model := part{name: "model", body: []byte("whisper-1")}
	for i, want := range []string{"Hello there.", "Second one.", ""} {
		status, h, body := post(t, s, "", model, part{name: "language", body: []byte("en")},
			part{name: "prompt", body: []byte("Handset")}, fileOf(t))
		var got struct {
			Text *string `json:"text"`
		}
		if status != 200 || json.Unmarshal(body, &got) != nil || got.Text == nil || *got.Text != want ||
			!strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("request %d: %d %s %q, want text %q", i, status, h.Get("Content-Type"), body, want)
		}
	}
	u := s.Uploads()[0]
	samples := u.Samples
	u.Samples = nil
	if u.Model != "whisper-1" || u.Language != "en" || u.Prompt != "Handset" || u.Filename != "utterance.wav" ||
		u.ContentType != "audio/wav" || u.Format != audio.Telephone || u.Duration != 1500*time.Millisecond || u.Text != "Hello there." || u.Status != 200 {
		t.Errorf("upload = %+v", u)
	}
	if math.Abs(u.RMSDBFS-audiotest.SpeechLevelDBFS) > 1.5 || u.PeakDBFS < u.RMSDBFS+3 || u.PeakDBFS > 0 {
		t.Errorf("levels: RMS %.1f dBFS, peak %.1f dBFS", u.RMSDBFS, u.PeakDBFS)
	}
	if len(samples) != 12000 {
		t.Errorf("kept %d samples, want 12000", len(samples))
	}
}

func TestTranscriptionResponseFormats(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{})
	cases := []struct {
		format, ctype string
		check         func(body []byte) bool
	}{
		{"json", "application/json", func(b []byte) bool { return string(b) == `{"text":"Good morning."}`+"\n" }},
		{"text", "text/plain", func(b []byte) bool { return string(b) == "Good morning.\n" }},
		{"verbose_json", "application/json", func(b []byte) bool {
			var v struct {
				Task, Language, Text string
				Duration             float64
				Segments             []struct {
					Start, End float64
					Text       string
				}
			}
			return json.Unmarshal(b, &v) == nil && v.Task == "transcribe" && v.Language == "english" &&
				v.Text == "Good morning." && v.Duration == 1.5 && len(v.Segments) == 1 && v.Segments[0].End == 1.5
		}},
		{"srt", "text/plain", func(b []byte) bool {
			return string(b) == "1\n00:00:00,000 --> 00:00:01,500\nGood morning.\n\n"
		}},
		{"vtt", "text/vtt", func(b []byte) bool {
			return string(b) == "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nGood morning.\n\n"
		}},
	}
	for _, c := range cases {
		s.Script("Good morning.")
		status, h, body := post(t, s, "", part{name: "model", body: []byte("whisper-1")},
			part{name: "response_format", body: []byte(c.format)}, fileOf(t))
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), c.ctype) || !c.check(body) {
			t.Errorf("%s: %d %s %q", c.format, status, h.Get("Content-Type"), body)
		}
	}
}

func TestTranscriptionValidation(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{Models: []string{"whisper-1"}, Transcripts: []string{"kept"}})
	model := part{name: "model", body: []byte("whisper-1")}
	short := wavFile(t, audio.Telephone, telephoneSpeech[:400]) // 50 ms
	cases := []struct {
		name   string
		parts  []part
		status int
		param  string
	}{
		{"no model", []part{fileOf(t)}, 400, "model"},
		{"no file", []part{model}, 400, "file"},
		{"file as a plain field", []part{model, {name: "file", body: []byte("RIFF")}}, 400, "file"},
		{"unknown model", []part{{name: "model", body: []byte("whisper-9")}, fileOf(t)}, 404, "model"},
		{"bad response_format", []part{model, {name: "response_format", body: []byte("xml")}, fileOf(t)}, 400, "response_format"},
		{"not a WAV", []part{model, {name: "file", filename: "a.wav", ctype: "audio/wav", body: []byte("ID3 not a wave file at all")}}, 400, "file"},
		{"mp3 name", []part{model, {name: "file", filename: "a.mp3", ctype: "audio/mpeg", body: wavFile(t, audio.Telephone, telephoneSpeech)}}, 400, "file"},
		{"too short", []part{model, {name: "file", filename: "a.wav", ctype: "audio/wav", body: short}}, 400, "file"},
	}
	for _, c := range cases {
		status, _, body := post(t, s, "", c.parts...)
		e := decodeError(t, body)
		if status != c.status || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want %d about %s", c.name, status, body, c.status, c.param)
		}
	}
	if s.Remaining() != 1 {
		t.Errorf("refused requests used the script: %d left", s.Remaining())
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/audio/transcriptions", strings.NewReader(`{"model":"whisper-1"}`))
	req.Header.Set("Content-Type", "application/json")
	if status, _, body := do(t, s, req); status != 400 {
		t.Errorf("JSON body: %d %s", status, body)
	}
	if n := len(s.Uploads()); n != len(cases)+1 {
		t.Errorf("%d uploads recorded, want %d", n, len(cases)+1)
	}
}

func TestTranscriptionMagic(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{SlowDelay: 150 * time.Millisecond})
	s.Script("FAIL500", "FAIL400 no", "FAIL429", "SLOW and steady.", "ok")
	model := part{name: "model", body: []byte("whisper-1")}
	for _, want := range []struct {
		status int
		typ    string
	}{{500, "server_error"}, {400, "invalid_request_error"}, {429, "requests"}} {
		status, _, body := post(t, s, "", model, fileOf(t))
		if e := decodeError(t, body); status != want.status || e.Error.Type != want.typ {
			t.Errorf("got %d %s, want %d %s", status, body, want.status, want.typ)
		}
	}
	begin := time.Now()
	status, _, body := post(t, s, "", model, fileOf(t))
	if status != 200 || string(body) != `{"text":"and steady."}`+"\n" || time.Since(begin) < 150*time.Millisecond {
		t.Errorf("SLOW: %d %s after %v", status, body, time.Since(begin))
	}
}

func TestTranscriptionHang(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{Transcripts: []string{"HANG"}})
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.WriteField("model", "whisper-1")
		w, _ := mw.CreateFormFile("file", "u.wav")
		_, _ = w.Write(wavFile(t, audio.Telephone, telephoneSpeech))
		_ = mw.Close()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/audio/transcriptions", &b)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := s.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	held := func(ups []fakeopenaispeech.Upload, _ []fakeopenaispeech.Speech) bool {
		return len(ups) == 1 && ups[0].Held
	}
	if err := s.WaitFor(testContext(t), held); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("HANG answered: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	<-done
	if err := s.AwaitUploadsDone(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if u := s.Uploads()[0]; !u.Aborted || u.Status != 0 || u.Held {
		t.Errorf("upload = %+v, want aborted", u)
	}
}

func TestSpeechPCMAndWAV(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{ChunkEvery: -1})
	const input = "Hello from the fake speech server."
	status, h, pcm := speak(t, s, "", map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "pcm"})
	if status != 200 || h.Get("Content-Type") != "audio/pcm" {
		t.Fatalf("pcm: %d %s", status, h.Get("Content-Type"))
	}
	if want := len([]rune(input)) * 60 * 48; len(pcm) != want || len(pcm) != s.AudioBytes(input) {
		t.Errorf("pcm: %d bytes, want %d (60 ms a character at 24 kHz)", len(pcm), want)
	}
	if s.AudioDuration(input) != time.Duration(len(input))*60*time.Millisecond {
		t.Errorf("AudioDuration = %v", s.AudioDuration(input))
	}
	if db := audiotest.PeakFrameDBFS(pcmSamples(pcm), 24000); math.Abs(db-audiotest.TTSPeakFrameDBFS) > 0.5 {
		t.Errorf("loudest frame at %.1f dBFS, want about %.0f (a cloud TTS voice's level)", db, audiotest.TTSPeakFrameDBFS)
	}
	status, h, file := speak(t, s, "", map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "wav"})
	if status != 200 || h.Get("Content-Type") != "audio/wav" {
		t.Fatalf("wav: %d %s", status, h.Get("Content-Type"))
	}
	f, data, err := wav.Read(bytes.NewReader(file))
	if err != nil || f != fakeopenaispeech.PCM || !bytes.Equal(data, pcm) {
		t.Errorf("wav: %v %v, %d bytes; want the pcm answer in a 24 kHz WAV", err, f, len(data))
	}
	sp := s.Speeches()
	if len(sp) != 2 || sp[0].Model != "tts-1" || sp[0].Voice != "alloy" || sp[0].Input != input || sp[0].ResponseFormat != "pcm" ||
		sp[0].Speed != 1 || sp[0].Status != 200 || sp[0].Bytes != len(pcm) || sp[0].Aborted || !sp[0].Done || sp[1].Bytes != len(file) {
		t.Errorf("speeches = %+v", sp)
	}
	// Speed shortens the audio; the same text gives the same audio.
	_, _, fast := speak(t, s, "", map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "pcm", "speed": 2.0})
	if len(fast) != len(pcm)/2 {
		t.Errorf("speed 2: %d bytes, want %d", len(fast), len(pcm)/2)
	}
	_, _, again := speak(t, s, "", map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "pcm"})
	if !bytes.Equal(again, pcm) {
		t.Error("the same input gave different audio")
	}
}

func TestSpeechTone(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{ToneHz: 440, ChunkEvery: -1})
	_, _, pcm := speak(t, s, "", map[string]any{"model": "tts-1", "input": "A steady tone.", "voice": "alloy", "response_format": "pcm"})
	if db := audiotest.ToneLevelDB(pcmSamples(pcm), 24000, 440); math.Abs(db-(-6)) > 1 {
		t.Errorf("440 Hz at %.1f dBFS, want about -6 (a -3 dBFS peak sine)", db)
	}
}

// chunkTimes reads a streamed answer and returns the size of each read and when it came.
func chunkTimes(t *testing.T, s *fakeopenaispeech.Server, v any) (sizes []int, gaps []time.Duration, first time.Duration) {
	t.Helper()
	body, _ := json.Marshal(v)
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/audio/speech", bytes.NewReader(body))
	begin := time.Now()
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first = time.Since(begin)
	last := time.Now()
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			sizes = append(sizes, n)
			gaps = append(gaps, time.Since(last))
			last = time.Now()
		}
		if err != nil {
			break
		}
	}
	return sizes, gaps, first
}

// writeLog is the ResponseWriter a handler writes through, noting when the headers went
// and the size and time of every Write: the chunks as the handler made them, however late
// the client reads them (a client late by one ChunkEvery would read two chunks as one).
type writeLog struct {
	http.ResponseWriter
	arrived, headers time.Time
	sizes            []int
	at               []time.Time
}

func (w *writeLog) WriteHeader(code int) {
	w.headers = time.Now()
	w.ResponseWriter.WriteHeader(code)
}

func (w *writeLog) Write(b []byte) (int, error) {
	w.sizes, w.at = append(w.sizes, len(b)), append(w.at, time.Now())
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer's Flush.
func (w *writeLog) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestSpeechStreamsInChunks(t *testing.T) {
	const chunk, every, firstByte = 4801, 20 * time.Millisecond, 100 * time.Millisecond
	fake := fakeopenaispeech.New(fakeopenaispeech.Options{ChunkBytes: chunk, ChunkEvery: every, FirstByteDelay: firstByte})
	defer fake.Close()
	logs := make(chan *writeLog, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wl := &writeLog{ResponseWriter: w, arrived: time.Now()}
		fake.ServeHTTP(wl, r)
		logs <- wl
	}))
	defer srv.Close()
	const input = "Twenty characters!!" // 19 runes: 1.14 s, 54720 bytes
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "pcm"})
	resp, err := srv.Client().Post(srv.URL+"/v1/audio/speech", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(got) != fake.AudioBytes(input) {
		t.Fatalf("%d bytes, %v; want %d", len(got), err, fake.AudioBytes(input))
	}
	wl := <-logs
	// Every chunk ChunkBytes (odd, as configured) but the last; the pauses are lower
	// bounds, so a loaded machine can only make them longer.
	var want []int
	for left := len(got); left > 0; left -= chunk {
		want = append(want, min(chunk, left))
	}
	if !slices.Equal(wl.sizes, want) {
		t.Errorf("writes of %v bytes, want %v", wl.sizes, want)
	}
	if d := wl.headers.Sub(wl.arrived); d < firstByte {
		t.Errorf("headers after %v, want the %v first-byte delay", d, firstByte)
	}
	for i := 1; i < len(wl.at); i++ {
		if gap := wl.at[i].Sub(wl.at[i-1]); gap < every {
			t.Errorf("chunk %d came %v after the one before, want at least %v", i, gap, every)
		}
	}
}

func TestSpeechValidation(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{Models: []string{"tts-1"}, Voices: []string{"alloy"}, ChunkEvery: -1, ToneHz: 300})
	ok := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"model": "tts-1", "input": "Hello.", "voice": "alloy", "response_format": "pcm"}
		mod(m)
		return m
	}
	cases := []struct {
		name   string
		body   any
		status int
		param  string
	}{
		{"not JSON", "{model: tts-1", 400, ""},
		{"no model", ok(func(m map[string]any) { delete(m, "model") }), 400, "model"},
		{"no input", ok(func(m map[string]any) { delete(m, "input") }), 400, "input"},
		{"empty input", ok(func(m map[string]any) { m["input"] = "" }), 400, "input"},
		{"blank input", ok(func(m map[string]any) { m["input"] = "  \n" }), 400, "input"},
		{"input too long", ok(func(m map[string]any) { m["input"] = strings.Repeat("é", 4097) }), 400, "input"},
		{"no voice", ok(func(m map[string]any) { delete(m, "voice") }), 400, "voice"},
		{"unknown voice", ok(func(m map[string]any) { m["voice"] = "bob" }), 400, "voice"},
		{"unknown format", ok(func(m map[string]any) { m["response_format"] = "ogg" }), 400, "response_format"},
		{"mp3 default", ok(func(m map[string]any) { delete(m, "response_format") }), 400, "response_format"},
		{"opus", ok(func(m map[string]any) { m["response_format"] = "opus" }), 400, "response_format"},
		{"speed too low", ok(func(m map[string]any) { m["speed"] = 0.1 }), 400, "speed"},
		{"speed too high", ok(func(m map[string]any) { m["speed"] = 4.5 }), 400, "speed"},
		{"sse", ok(func(m map[string]any) { m["stream_format"] = "sse" }), 400, "stream_format"},
		{"unknown model", ok(func(m map[string]any) { m["model"] = "tts-9" }), 404, "model"},
	}
	for _, c := range cases {
		status, _, body := speak(t, s, "", c.body)
		e := decodeError(t, body)
		gotParam := ""
		if e.Error.Param != nil {
			gotParam = *e.Error.Param
		}
		if status != c.status || gotParam != c.param {
			t.Errorf("%s: %d %s, want %d about %q", c.name, status, body, c.status, c.param)
		}
	}
	status, _, _ := speak(t, s, "", ok(func(m map[string]any) { m["input"] = strings.Repeat("é", 4096); m["speed"] = 4.0 }))
	if status != 200 {
		t.Errorf("4096 characters at speed 4: %d", status)
	}
	status, _, _ = speak(t, s, "", ok(func(m map[string]any) { m["voice"] = map[string]string{"id": "alloy"} }))
	if status != 200 {
		t.Errorf("voice as {id}: %d", status)
	}
}

func TestSpeechMagic(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{SlowDelay: 200 * time.Millisecond, ChunkEvery: -1})
	req := func(input string) map[string]any {
		return map[string]any{"model": "tts-1", "input": input, "voice": "alloy", "response_format": "pcm"}
	}
	for _, c := range []struct {
		input  string
		status int
	}{{"FAIL500 now", 500}, {"now FAIL400.", 400}, {"FAIL429", 429}, {"FAILONCE please", 500}, {"FAILONCE please", 200}, {"NOTFAIL500", 200}} {
		status, _, body := speak(t, s, "", req(c.input))
		if status != c.status {
			t.Errorf("%q: %d %s, want %d", c.input, status, body, c.status)
		}
		if status != 200 {
			decodeError(t, body)
		}
	}
	sizes, _, first := chunkTimes(t, s, req("SLOW words."))
	if first < 200*time.Millisecond || len(sizes) == 0 {
		t.Errorf("SLOW: headers after %v, %d reads", first, len(sizes))
	}
	// CUTOFF: half the audio, then a dropped connection.
	body, _ := json.Marshal(req("CUTOFF midway through this sentence."))
	resp, err := s.Client().Post(s.URL()+"/audio/speech", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(got) == 0 || len(got) > s.AudioBytes("CUTOFF midway through this sentence.")/2 {
		t.Errorf("CUTOFF: %d bytes, err %v; want half the audio then an error", len(got), err)
	}
}

func TestSpeechStallAndClose(t *testing.T) {
	s, err := fakeopenaispeech.Start(fakeopenaispeech.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": "STALL after the first chunk.", "voice": "alloy", "response_format": "pcm"})
	resp, err := s.Client().Post(s.URL()+"/audio/speech", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if n, err := io.ReadFull(resp.Body, make([]byte, 4800)); n != 4800 || err != nil {
		t.Fatalf("first chunk: %d %v", n, err)
	}
	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		readDone <- err
	}()
	select {
	case err := <-readDone:
		t.Fatalf("STALL ended by itself: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(hangGuard):
		t.Fatal("Close hung on a stalled request")
	}
	<-readDone
	if sp := s.Speeches(); len(sp) != 1 || !sp[0].Done || sp[0].Bytes != 4800 {
		t.Errorf("speeches = %+v", sp)
	}
	s.Close() // idempotent
}

func TestSpeechClientGoesAway(t *testing.T) {
	s := start(t, fakeopenaispeech.Options{ChunkEvery: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": "A long answer that the caller interrupts.", "voice": "alloy", "response_format": "pcm"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/audio/speech", bytes.NewReader(body))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 100))
	cancel()
	resp.Body.Close()
	if err := s.AwaitSpeechesDone(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if sp := s.Speeches()[0]; !sp.Aborted || sp.Bytes >= s.AudioBytes(sp.Input) {
		t.Errorf("speech = %+v, want aborted part way", sp)
	}
}

func TestHandlerWithoutStart(t *testing.T) {
	fake := fakeopenaispeech.New(fakeopenaispeech.Options{Transcripts: []string{"HANG"}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	defer fake.Close()
	body, _ := json.Marshal(map[string]any{"model": "tts-1", "input": "Hi.", "voice": "alloy", "response_format": "pcm"})
	resp, err := srv.Client().Post(srv.URL+"/v1/audio/speech", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != fake.AudioBytes("Hi.") {
		t.Errorf("%d, %d bytes", resp.StatusCode, len(b))
	}
	// Close releases a held request; the handler keeps serving.
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	_ = mw.WriteField("model", "whisper-1")
	w, _ := mw.CreateFormFile("file", "u.wav")
	_, _ = w.Write(wavFile(t, audio.Telephone, telephoneSpeech))
	_ = mw.Close()
	done := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/v1/audio/transcriptions", mw.FormDataContentType(), &mb)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if err := fake.AwaitUploads(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	fake.Close()
	if status := <-done; status != http.StatusServiceUnavailable {
		t.Errorf("held request after Close: %d, want 503", status)
	}
}

func TestPCMSamplesHelper(t *testing.T) {
	in := []int16{0, 1, -1, 32767, -32768}
	if got := pcmSamples(pcmBytes(in)); len(got) != len(in) || got[4] != -32768 {
		t.Errorf("round trip %v", got)
	}
}
