package deepgram_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestInterimThenFinal(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{Transcripts: []string{"hello from the test caller", "second thing"}}, deepgram.Options{}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	h.feed(ctx, t, st, cat(silence(200*time.Millisecond), speech(time.Second), silence(800*time.Millisecond),
		speech(600*time.Millisecond), silence(800*time.Millisecond)))
	got := collect(ctx, t, st, finals(2))
	want := []voice.Transcript{
		{Text: "hello from the"},
		{Text: "hello from the test caller", Final: true},
		{Text: "second"},
		{Text: "second thing", Final: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("transcripts (-want +got):\n%s", diff)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if rest := collect(ctx, t, st, nil); len(rest) != 0 {
		t.Errorf("after Close: %+v, want Results closed and empty", rest)
	}
	if s := st.Stats(); s != (deepgram.Stats{}) {
		t.Errorf("Stats = %+v, want nothing lost or repaired", s)
	}
	if err := st.Write(speech(20 * time.Millisecond)); !errors.Is(err, deepgram.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestFinalizeGivesFinalAtOnce(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{Transcripts: []string{"stop right there"}}, deepgram.Options{}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	// Speech and no trailing silence: only Finalize can end this utterance.
	h.feed(ctx, t, st, cat(silence(100*time.Millisecond), speech(800*time.Millisecond)))
	if err := st.Finalize(); err != nil {
		t.Fatal(err)
	}
	got := collect(ctx, t, st, finals(1))
	if last := got[len(got)-1]; last != (voice.Transcript{Text: "stop right there", Final: true}) {
		t.Fatalf("last transcript %+v, want the final", last)
	}
	if n := h.fake.Stats()[0].Finalizes; n != 1 {
		t.Errorf("fake saw %d Finalize, want 1", n)
	}
}

func TestAuthFailure(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{Key: "not-the-key"}, nil)
	ctx := testContext(t)
	_, err := h.rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	pe := providerError(t, err)
	if pe.Kind != voice.KindAuth || pe.Status != http.StatusUnauthorized || pe.Provider != "deepgram" || pe.Op != "open stream" {
		t.Errorf("error %+v, want deepgram open stream 401 auth", pe)
	}
	if !strings.Contains(err.Error(), "Invalid credentials.") {
		t.Errorf("error %q does not carry Deepgram's message", err)
	}
}

func TestRefusedBeforeDialing(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{}, nil)
	ctx := testContext(t)
	for _, f := range []audio.Format{{Encoding: audio.Mulaw, Rate: 16000}, {Encoding: audio.Alaw, Rate: 48000}, {Encoding: 99, Rate: 8000}} {
		_, err := h.rec.Stream(ctx, f, voice.StreamOptions{})
		if pe := providerError(t, err); pe.Kind != voice.KindBadInput {
			t.Errorf("%v: kind %v, want bad_input", f, pe.Kind)
		}
	}
	keyless, err := deepgram.New(deepgram.Options{BaseURL: h.url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyless.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if pe := providerError(t, err); pe.Kind != voice.KindAuth {
		t.Errorf("no key: kind %v, want auth", pe.Kind)
	}
	if n := h.fake.Connections() + h.fake.Rejected(); n != 0 {
		t.Errorf("the fake saw %d handshakes, want none", n)
	}
}

func TestHandshakeServerError(t *testing.T) {
	unavailable := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"category":"SERVICE_UNAVAILABLE","message":"Try again shortly.","request_id":"r1"}`))
		})
	}
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{}, unavailable)
	_, err := h.rec.Stream(testContext(t), audio.Telephone, voice.StreamOptions{})
	pe := providerError(t, err)
	if pe.Kind != voice.KindTransient || pe.Status != 503 || !strings.Contains(pe.Error(), "Try again shortly.") {
		t.Errorf("error %v, want a transient 503 with the vendor message", err)
	}
}

func TestQueryParameters(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts deepgram.Options
		f    audio.Format
		want url.Values
	}{
		{"defaults", deepgram.Options{}, audio.Telephone, url.Values{
			"encoding": {"mulaw"}, "sample_rate": {"8000"}, "channels": {"1"}, "interim_results": {"true"},
			"model": {"nova-3"}, "language": {"en-US"}, "punctuate": {"true"}, "smart_format": {"true"},
			"endpointing": {"300"}, "utterance_end_ms": {"1000"}, "tag": {"c_query"},
		}},
		{"tuned", deepgram.Options{Model: "nova-2-phonecall", Language: "de", Endpointing: -1, UtteranceEnd: -1},
			audio.Format{Encoding: audio.PCM16, Rate: 16000}, url.Values{
				"encoding": {"linear16"}, "sample_rate": {"16000"}, "channels": {"1"}, "interim_results": {"true"},
				"model": {"nova-2-phonecall"}, "language": {"de"}, "punctuate": {"true"}, "smart_format": {"true"},
				"endpointing": {"false"}, "tag": {"c_query"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakedeepgram.Options{}, tc.opts, nil)
			ctx := testContext(t)
			st, err := h.rec.Stream(ctx, tc.f, voice.StreamOptions{CallID: "c_query"})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got := h.fake.Stats()[0]
			if diff := cmp.Diff(tc.want, got.Query); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
			if !got.AuthHeader {
				t.Error("no Authorization header")
			}
		})
	}
}

func TestKeepAliveWhileIdle(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{KeepAliveEvery: 10 * time.Millisecond}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	if err := h.fake.WaitFor(ctx, func(cs []fakedeepgram.ConnStats) bool { return cs[0].KeepAlives >= 3 }); err != nil {
		t.Fatalf("keepalives: %v (stats %+v)", err, h.fake.Stats())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if s := h.fake.Stats()[0]; s.AudioBytes != 0 || s.CloseStreams != 1 {
		t.Errorf("stats %+v, want no audio and one CloseStream", s)
	}
}

func TestDroppedSocketIsReopenedAndReplayed(t *testing.T) {
	f := audio.Telephone
	h := newHarness(t, fakedeepgram.Options{
		Transcripts:    []string{"please do not lose me"},
		DropAfterBytes: int64(f.Bytes(700 * time.Millisecond)), // mid-utterance
	}, deepgram.Options{ReconnectBackoff: time.Millisecond}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	h.feed(ctx, t, st, cat(silence(200*time.Millisecond), speech(time.Second), silence(time.Second)))
	got := collect(ctx, t, st, finals(1))
	if last := got[len(got)-1]; last.Text != "please do not lose me" {
		t.Fatalf("final %+v, want the utterance the drop interrupted", last)
	}
	cs := h.fake.Stats()
	if len(cs) != 2 || !cs[0].Dropped || cs[1].Dropped {
		t.Fatalf("connections %+v, want a dropped one and its replacement", cs)
	}
	if diff := cmp.Diff([]string{"please do not lose me"}, cs[1].Transcripts); diff != "" {
		t.Errorf("second connection transcripts (-want +got):\n%s", diff)
	}
	if s := st.Stats(); s.Reconnects != 1 {
		t.Errorf("Reconnects = %d, want 1", s.Reconnects)
	}
}

func TestReplayStartsAfterLastFinal(t *testing.T) {
	f := audio.Telephone
	first := cat(silence(200*time.Millisecond), speech(600*time.Millisecond), silence(800*time.Millisecond)) // final at 1.4 s
	h := newHarness(t, fakedeepgram.Options{
		Transcripts:    []string{"first words", "second words"},
		DropAfterBytes: int64(len(first) + f.Bytes(400*time.Millisecond)), // inside the second utterance
	}, deepgram.Options{ReconnectBackoff: time.Millisecond}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	h.feed(ctx, t, st, cat(first, speech(600*time.Millisecond), silence(800*time.Millisecond)))
	var got []string
	for _, tr := range collect(ctx, t, st, finals(2)) {
		if tr.Final {
			got = append(got, tr.Text)
		}
	}
	if diff := cmp.Diff([]string{"first words", "second words"}, got); diff != "" {
		t.Fatalf("finals (-want +got):\n%s", diff)
	}
	if err := st.Close(); err != nil { // the fake has all the audio once it closed gracefully
		t.Fatal(err)
	}
	cs := h.fake.Stats()
	if len(cs) != 2 {
		t.Fatalf("%d connections, want 2", len(cs))
	}
	// The first utterance was final before the drop, its result ending 1.4 s into the
	// stream: only the audio after that is replayed.
	total := len(first) + f.Bytes(1400*time.Millisecond)
	want := int64(total - f.Bytes(1400*time.Millisecond))
	if cs[1].AudioBytes != want || len(cs[1].Transcripts) != 1 {
		t.Errorf("second connection got %d bytes and %q; want %d and only the second utterance",
			cs[1].AudioBytes, cs[1].Transcripts, want)
	}
}

func TestReconnectGivesUp(t *testing.T) {
	var requests atomic.Int32
	firstOnly := func(fake http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if requests.Add(1) == 1 {
				fake.ServeHTTP(w, r)
				return
			}
			http.Error(w, `{"err_code":"SERVICE_UNAVAILABLE","err_msg":"overloaded"}`, http.StatusServiceUnavailable)
		})
	}
	h := newHarness(t, fakedeepgram.Options{DropAfterBytes: 1600}, deepgram.Options{ReconnectBackoff: time.Millisecond}, firstOnly)
	ctx := testContext(t)
	st := h.open(ctx, t)
	if err := st.Write(speech(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	collect(ctx, t, st, nil) // until Results is closed
	err := st.Close()
	pe := providerError(t, err)
	if pe.Op != "reopen stream" || pe.Kind != voice.KindTransient || pe.Status != 503 || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("Close = %v, want the last reopen's 503", err)
	}
	if n := requests.Load(); n != 1+deepgram.DefaultReconnects {
		t.Errorf("%d handshakes, want 1 + %d attempts", n, deepgram.DefaultReconnects)
	}
	if err2 := st.Write(speech(20 * time.Millisecond)); !errors.Is(err2, err) {
		t.Errorf("Write after failure = %v, want the stream's error", err2)
	}
}

func TestCloseFlushesPendingUtterance(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{Transcripts: []string{"last words before hanging up"}}, deepgram.Options{}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	if err := st.Write(cat(silence(100*time.Millisecond), speech(800*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	got := collect(ctx, t, st, nil)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(got) == 0 || got[len(got)-1] != (voice.Transcript{Text: "last words before hanging up", Final: true}) {
		t.Fatalf("transcripts %+v, want the flushed final last", got)
	}
	if s := h.fake.Stats()[0]; s.CloseStreams != 1 || s.Dropped {
		t.Errorf("fake stats %+v, want one CloseStream", s)
	}
}

func TestCancelEndsStream(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{}, nil)
	ctx, cancel := context.WithCancel(testContext(t))
	st := h.open(ctx, t)
	h.feed(testContext(t), t, st, speech(300*time.Millisecond))
	cancel()
	collect(testContext(t), t, st, nil) // Results is closed
	err := st.Close()
	if pe := providerError(t, err); pe.Kind != voice.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Close after cancel = %v, want canceled", err)
	}
	if err := h.fake.WaitFor(testContext(t), func(cs []fakedeepgram.ConnStats) bool { return cs[0].Closed }); err != nil {
		t.Fatalf("the fake's connection stayed open: %v", err)
	}
}

// scripted serves one WebSocket that sends msgs, then closes normally on CloseStream.
func scripted(t *testing.T, msgs ...string) string {
	t.Helper()
	srv := newScriptServer(t, func(ctx context.Context, c *websocket.Conn) {
		for _, m := range msgs {
			if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				return
			}
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			if strings.Contains(string(data), "CloseStream") {
				_ = c.Close(websocket.StatusNormalClosure, "")
				return
			}
		}
	})
	return srv
}

func result(text string, start, dur float64, isFinal, speechFinal bool) string {
	b := func(v bool) string {
		if v {
			return "true"
		}
		return "false"
	}
	return `{"type":"Results","channel_index":[0,1],"start":` + ftoa(start) + `,"duration":` + ftoa(dur) +
		`,"is_final":` + b(isFinal) + `,"speech_final":` + b(speechFinal) + `,"from_finalize":false,` +
		`"channel":{"alternatives":[{"transcript":"` + text + `","confidence":0.9,"words":[]}]},"metadata":{"request_id":"x"}}`
}

func TestAccumulatesFinalSegments(t *testing.T) {
	base := scripted(t,
		`{"type":"SpeechStarted","channel":[0],"timestamp":0.1}`,
		result("hello", 0, 0.5, false, false),
		`{"type":"Results","start":"soon"}`, // malformed: counted and dropped
		result("hello there", 0, 1, true, false),
		result("how", 1, 0.3, false, false),
		result("how are you", 1, 1, true, true),
		result("", 2, 1, true, false),
		result("again", 3, 0.5, true, false),
		`{"type":"UtteranceEnd","channel":[0,1],"last_word_end":3.4}`,
		`{"type":"Metadata","request_id":"x","duration":4}`,
	)
	rec, err := deepgram.New(deepgram.Options{Key: testKey, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	s, err := rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.(*deepgram.LiveStream)
	got := collect(ctx, t, st, finals(2))
	want := []voice.Transcript{
		{Text: "hello"},
		{Text: "hello there"},
		{Text: "hello there how"},
		{Text: "hello there how are you", Final: true},
		{Text: "again"},
		{Text: "again", Final: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transcripts (-want +got):\n%s", diff)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := st.Stats().Malformed; n != 1 {
		t.Errorf("Malformed = %d, want 1", n)
	}
}

func TestPolicyCloseIsNotRetried(t *testing.T) {
	var handshakes atomic.Int32
	base := newScriptServer(t, func(ctx context.Context, c *websocket.Conn) {
		handshakes.Add(1)
		_ = c.Close(websocket.StatusPolicyViolation, "DATA-0000: The payload cannot be decoded as audio.")
	})
	rec, err := deepgram.New(deepgram.Options{Key: testKey, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	st, err := rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	collect(ctx, t, st, nil)
	err = st.Close()
	if pe := providerError(t, err); pe.Kind != voice.KindBadInput || !strings.Contains(err.Error(), "DATA-0000") {
		t.Errorf("Close = %v, want bad input with the server's reason", err)
	}
	if n := handshakes.Load(); n != 1 {
		t.Errorf("%d handshakes, want 1: a refused payload is not worth reopening for", n)
	}
}

// A server that accepts and drops every socket before saying anything is not redialled
// forever: those reopens count as failed attempts.
func TestInstantDropsGiveUp(t *testing.T) {
	var handshakes atomic.Int32
	base := newScriptServer(t, func(ctx context.Context, c *websocket.Conn) {
		handshakes.Add(1)
		_ = c.Close(websocket.StatusInternalError, "NET-0001 simulated")
	})
	rec, err := deepgram.New(deepgram.Options{Key: testKey, BaseURL: base, ReconnectBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	st, err := rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	collect(ctx, t, st, nil)
	err = st.Close()
	if pe := providerError(t, err); pe.Op != "reopen stream" || pe.Kind != voice.KindTransient || !strings.Contains(err.Error(), "NET-0001") {
		t.Errorf("Close = %v, want a transient reopen failure naming the last drop", err)
	}
	if n := handshakes.Load(); n != 1+deepgram.DefaultReconnects {
		t.Errorf("%d handshakes, want 1 + %d", n, deepgram.DefaultReconnects)
	}
	if n := st.(*deepgram.LiveStream).Stats().Reconnects; n != deepgram.DefaultReconnects {
		t.Errorf("Reconnects = %d, want %d", n, deepgram.DefaultReconnects)
	}
}

// Audio written a 20 ms frame at a time goes out three frames a message (a third of the
// socket writes), and a frame that no other follows is still sent after sendBatch (60 ms).
func TestFramesGoOutInBatches(t *testing.T) {
	h := newHarness(t, fakedeepgram.Options{}, deepgram.Options{}, nil)
	ctx := testContext(t)
	st := h.open(ctx, t)
	frame := audio.Telephone.FrameBytes()
	const frames = 30
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range frames {
		if err := st.Write(make([]byte, frame)); err != nil {
			t.Fatal(err)
		}
		<-tick.C
	}
	if err := h.fake.WaitFor(ctx, func(cs []fakedeepgram.ConnStats) bool { return cs[0].AudioBytes == frames*int64(frame) }); err != nil {
		t.Fatalf("received %+v: %v", h.fake.Stats(), err)
	}
	if m := h.fake.Stats()[0].AudioMessages; m > frames/2 {
		t.Errorf("%d frames went out in %d messages, want about a third as many", frames, m)
	}
	wrote := time.Now()
	if err := st.Write(make([]byte, frame)); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitFor(ctx, func(cs []fakedeepgram.ConnStats) bool { return cs[0].AudioBytes == (frames+1)*int64(frame) }); err != nil {
		t.Fatalf("a lone frame was never sent: %v", err)
	}
	if waited := time.Since(wrote); waited < 50*time.Millisecond {
		t.Errorf("a lone frame went out after %v, before its batch's 60 ms were up", waited)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
