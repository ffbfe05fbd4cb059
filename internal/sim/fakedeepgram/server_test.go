package fakedeepgram_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const telephoneQuery = "encoding=mulaw&sample_rate=8000&channels=1&interim_results=true"

func TestHandshakeAuth(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Key: "sekrit"})
	ctx := testContext(t)
	for _, key := range []string{"", "wrong"} {
		_, resp, err := dialRaw(ctx, base, telephoneQuery, key)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("key %q: err=%v resp=%v, want HTTP 401", key, err, resp)
		}
		var body struct{ ErrCode, ErrMsg, RequestID string }
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &struct {
			ErrCode   *string `json:"err_code"`
			ErrMsg    *string `json:"err_msg"`
			RequestID *string `json:"request_id"`
		}{&body.ErrCode, &body.ErrMsg, &body.RequestID}); err != nil {
			t.Fatalf("401 body %q: %v", raw, err)
		}
		if body.ErrCode != "INVALID_AUTH" || body.ErrMsg != "Invalid credentials." || body.RequestID == "" {
			t.Errorf("401 body = %+v", body)
		}
	}
	c := dial(ctx, t, base, telephoneQuery, "sekrit")
	_ = c.Close(websocket.StatusNormalClosure, "")
	if got := fake.Rejected(); got != 2 {
		t.Errorf("Rejected() = %d, want 2", got)
	}
	st := fake.Stats()
	if len(st) != 1 || !st[0].AuthHeader || st[0].Query.Get("encoding") != "mulaw" {
		t.Errorf("Stats() = %+v, want one authorised mulaw connection", st)
	}
}

func TestHandshakeRejectsBadParams(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{})
	ctx := testContext(t)
	for _, tc := range []struct{ query, want string }{
		{"encoding=opus&sample_rate=48000", "unsupported encoding"},
		{"sample_rate=8000", "encoding parameter is required"},
		{"encoding=mulaw", "sample_rate"},
		{"encoding=linear16&sample_rate=16000&channels=2", "channels=1"},
		{"encoding=mulaw&sample_rate=8000&interim_results=maybe", "interim_results"},
		{"encoding=mulaw&sample_rate=8000&utterance_end_ms=1000", "requires interim_results"},
	} {
		_, resp, err := dialRaw(ctx, base, tc.query, "")
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: err=%v, want HTTP 400", tc.query, err)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s: body %s, want it to mention %q", tc.query, raw, tc.want)
		}
	}
	if fake.Connections() != 0 {
		t.Errorf("Connections() = %d after only bad handshakes", fake.Connections())
	}
}

func TestUtteranceMessages(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"Hello there, general Kenobi."}})
	ctx := testContext(t)
	c := dial(ctx, t, base, telephoneQuery+"&utterance_end_ms=1000&vad_events=true", "")
	f := audio.Telephone
	sendFrames(ctx, t, c, cat(silence(f, 200*time.Millisecond), speech(f, time.Second), silence(f, 1500*time.Millisecond)), f.FrameBytes())

	got := readUntil(ctx, t, c, "UtteranceEnd")
	want := []string{
		"SpeechStarted",
		`Results final=F speech_final=F from_finalize=F "Hello there,"`,
		`Results final=T speech_final=T from_finalize=F "Hello there, general Kenobi."`,
		"UtteranceEnd",
	}
	if diff := cmp.Diff(want, summary(got)); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
	st := fake.Stats()[0]
	final := got[2]
	if !cmp.Equal(final.ChannelIndex, []int{0, 1}) || final.Metadata.RequestID != st.RequestID {
		t.Errorf("final channel_index=%v request_id=%q, want [0 1] and %q", final.ChannelIndex, final.Metadata.RequestID, st.RequestID)
	}
	if diff := cmp.Diff([]string{"hello", "there", "general", "kenobi"}, final.Words); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	// Speech starts at 0.2 s and lasts 1 s; the endpoint comes 0.6 s of silence later.
	if math.Abs(got[0].Timestamp-0.2) > 0.021 || math.Abs(final.Start-0.2) > 0.021 ||
		math.Abs(final.Start+final.Duration-1.8) > 0.041 {
		t.Errorf("speech started at %.3f, final spans %.3f+%.3f; want 0.2 and 0.2..1.8", got[0].Timestamp, final.Start, final.Duration)
	}
	if math.Abs(got[3].LastWordEnd-1.2) > 0.021 {
		t.Errorf("last_word_end = %.3f, want 1.2", got[3].LastWordEnd)
	}
	if diff := cmp.Diff([]string{"Hello there, general Kenobi."}, st.Transcripts); diff != "" {
		t.Errorf("recorded transcripts (-want +got):\n%s", diff)
	}
	// The last 0.5 s of silence may still be on its way.
	total := int64(f.Bytes(2700 * time.Millisecond))
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].AudioBytes >= total }); err != nil {
		t.Fatal(err)
	}
	if got := fake.Stats()[0].AudioBytes; got != total {
		t.Errorf("AudioBytes = %d, want %d", got, total)
	}
}

// The fake counts audio time: the same audio in one message or in 20 ms frames, in any
// encoding and with samples split across messages, brings the same results.
func TestAudioTimeNotWallTime(t *testing.T) {
	_, base := start(t, fakedeepgram.Options{Transcripts: []string{"one two three four", "five six"}})
	ctx := testContext(t)
	run := func(f audio.Format, enc string, chunk int) []string {
		q := "encoding=" + enc + "&sample_rate=" + itoa(f.Rate) + "&interim_results=true&tag=" + enc + itoa(chunk)
		c := dial(ctx, t, base, q, "")
		a := cat(speech(f, 700*time.Millisecond), silence(f, 700*time.Millisecond),
			speech(f, 500*time.Millisecond), silence(f, 700*time.Millisecond))
		if chunk == 0 {
			chunk = len(a)
		}
		sendFrames(ctx, t, c, a, chunk)
		sendJSON(ctx, t, c, "CloseStream")
		return summary(readUntil(ctx, t, c, "Metadata"))
	}
	want := []string{
		`Results final=F speech_final=F from_finalize=F "one two"`,
		`Results final=T speech_final=T from_finalize=F "one two three four"`,
		`Results final=F speech_final=F from_finalize=F "five"`,
		`Results final=T speech_final=T from_finalize=F "five six"`,
		"Metadata",
	}
	for _, tc := range []struct {
		f     audio.Format
		enc   string
		chunk int
	}{
		{audio.Telephone, "mulaw", 160},
		{audio.Telephone, "mulaw", 0},
		{audio.Format{Encoding: audio.Alaw, Rate: 8000}, "alaw", 1000},
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, "linear16", 333}, // odd: samples straddle messages
	} {
		if diff := cmp.Diff(want, run(tc.f, tc.enc, tc.chunk)); diff != "" {
			t.Errorf("%s in %d-byte messages (-want +got):\n%s", tc.enc, tc.chunk, diff)
		}
	}
}

func TestFinalize(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"right now please"}})
	ctx := testContext(t)
	c := dial(ctx, t, base, "encoding=mulaw&sample_rate=8000", "") // no interim results
	f := audio.Telephone
	sendFrames(ctx, t, c, speech(f, 500*time.Millisecond), f.FrameBytes())
	sendJSON(ctx, t, c, "Finalize")
	m, err := readMsg(ctx, t, c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary([]msg{m})[0], `Results final=T speech_final=F from_finalize=T "right now please"`; got != want {
		t.Fatalf("answer to Finalize = %s, want %s", got, want)
	}
	// Nothing pending: Deepgram answers an empty finalized result.
	sendJSON(ctx, t, c, "Finalize")
	m, err = readMsg(ctx, t, c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary([]msg{m})[0], `Results final=T speech_final=F from_finalize=T ""`; got != want {
		t.Fatalf("answer to an idle Finalize = %s, want %s", got, want)
	}
	if st := fake.Stats()[0]; st.Finalizes != 2 || len(st.Interims) != 0 {
		t.Errorf("Finalizes = %d, interims %q; want 2 and none", st.Finalizes, st.Interims)
	}
}

func TestCloseStreamFlushesAndCloses(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"goodbye"}})
	ctx := testContext(t)
	c := dial(ctx, t, base, telephoneQuery, "")
	f := audio.Telephone
	a := speech(f, 400*time.Millisecond)
	sendFrames(ctx, t, c, a, f.FrameBytes())
	sendJSON(ctx, t, c, "KeepAlive")
	sendJSON(ctx, t, c, "CloseStream")
	got := readUntil(ctx, t, c, "Metadata")
	want := []string{
		`Results final=F speech_final=F from_finalize=F "goodbye"`,
		`Results final=T speech_final=F from_finalize=F "goodbye"`,
		"Metadata",
	}
	if diff := cmp.Diff(want, summary(got)); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
	meta := got[2]
	sum := sha256.Sum256(a)
	if meta.SHA256 != hex.EncodeToString(sum[:]) || meta.Channels != 1 || meta.RequestID == "" {
		t.Errorf("Metadata sha256=%s channels=%d request_id=%q", meta.SHA256, meta.Channels, meta.RequestID)
	}
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after Metadata: %v, want a normal close", err)
	}
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].Closed }); err != nil {
		t.Fatal(err)
	}
	st := fake.Stats()[0]
	if st.CloseStreams != 1 || st.KeepAlives != 1 || st.Dropped || st.IdleClosed {
		t.Errorf("stats = %+v", st)
	}
}

func TestIdleTimeout(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{IdleTimeout: 50 * time.Millisecond})
	ctx := testContext(t)
	c := dial(ctx, t, base, telephoneQuery, "")
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || !strings.Contains(ce.Reason, "NET-0001") {
		t.Fatalf("idle connection ended with %v, want close 1011 NET-0001", err)
	}
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].Closed }); err != nil {
		t.Fatal(err)
	}
	if !fake.Stats()[0].IdleClosed {
		t.Error("IdleClosed not recorded")
	}
}

func TestDropFaultOnce(t *testing.T) {
	f := audio.Telephone
	fake, base := start(t, fakedeepgram.Options{DropAfterBytes: int64(f.Bytes(300 * time.Millisecond))})
	ctx := testContext(t)
	c := dial(ctx, t, base, telephoneQuery, "")
	a := speech(f, time.Second)
	for len(a) > 0 {
		if err := c.Write(ctx, websocket.MessageBinary, a[:f.FrameBytes()]); err != nil {
			break // the fake may be gone before all frames are written
		}
		a = a[f.FrameBytes():]
	}
	_, _, err := c.Read(ctx)
	if err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("dropped connection read %v, want an abrupt end without a close frame", err)
	}
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].Closed }); err != nil {
		t.Fatal(err)
	}
	if st := fake.Stats()[0]; !st.Dropped || st.AudioBytes != int64(f.Bytes(300*time.Millisecond)) {
		t.Errorf("Dropped=%v after %d bytes, want true after %d", st.Dropped, st.AudioBytes, f.Bytes(300*time.Millisecond))
	}

	// Once only: the next connection keeps going.
	c2 := dial(ctx, t, base, telephoneQuery, "")
	sendFrames(ctx, t, c2, speech(f, time.Second), f.FrameBytes())
	sendJSON(ctx, t, c2, "CloseStream")
	readUntil(ctx, t, c2, "Metadata")
	if st := fake.Stats()[1]; st.Dropped {
		t.Error("second connection was dropped too")
	}
}

func TestScriptPositionPerTag(t *testing.T) {
	_, base := start(t, fakedeepgram.Options{Transcripts: []string{"only line"}})
	ctx := testContext(t)
	f := audio.Telephone
	utter := cat(speech(f, 300*time.Millisecond), silence(f, 700*time.Millisecond))
	finals := func(tag string, n int) []string {
		c := dial(ctx, t, base, "encoding=mulaw&sample_rate=8000&tag="+tag, "")
		var out []string
		for range n {
			sendFrames(ctx, t, c, utter, len(utter))
		}
		sendJSON(ctx, t, c, "CloseStream")
		for _, m := range readUntil(ctx, t, c, "Metadata") {
			if m.Type == "Results" {
				out = append(out, m.Transcript)
			}
		}
		return out
	}
	if diff := cmp.Diff([]string{"only line", "unscripted utterance 2"}, finals("a", 2)); diff != "" {
		t.Errorf("tag a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"only line"}, finals("b", 1)); diff != "" {
		t.Errorf("tag b starts its own script (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"unscripted utterance 3"}, finals("a", 1)); diff != "" {
		t.Errorf("tag a goes on where it was (-want +got):\n%s", diff)
	}
}

func TestCloseEndsOpenConnections(t *testing.T) {
	fake := fakedeepgram.New(fakedeepgram.Options{})
	ts := httptestServer(t, fake)
	ctx := testContext(t)
	c := dial(ctx, t, ts, telephoneQuery, "")
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Read(ctx)
		done <- err
	}()
	fake.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read succeeded after Close")
		}
	case <-ctx.Done():
		t.Fatal("connection still open after Close")
	}
	if _, _, err := dialRaw(ctx, ts, telephoneQuery, ""); err == nil {
		t.Error("a closed fake accepted a connection")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
