package fakedeepgram_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
)

// speech returns d of speech-like audio in f: a few harmonics under a syllable envelope.
func speech(f audio.Format, d time.Duration) []byte {
	n := int(d * time.Duration(f.Rate) / time.Second)
	pcm := make([]int16, n)
	const syllable = 0.18 // seconds
	for i := range pcm {
		t := float64(i) / float64(f.Rate)
		env := 0.35 + 0.65*math.Abs(math.Sin(math.Pi*t/syllable))
		v := 0.5*math.Sin(2*math.Pi*180*t) + 0.3*math.Sin(2*math.Pi*360*t) + 0.2*math.Sin(2*math.Pi*720*t)
		pcm[i] = int16(7000 * env * v)
	}
	return encode(f, pcm)
}

// silence returns d of digital silence in f.
func silence(f audio.Format, d time.Duration) []byte {
	return encode(f, make([]int16, int(d*time.Duration(f.Rate)/time.Second)))
}

func encode(f audio.Format, pcm []int16) []byte {
	switch f.Encoding {
	case audio.Mulaw:
		return g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
	case audio.Alaw:
		return g711.EncodeAlaw(make([]byte, len(pcm)), pcm)
	}
	out := make([]byte, 2*len(pcm))
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return out
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// start mounts a fake on an httptest server; both are closed when the test ends.
func start(t *testing.T, opts fakedeepgram.Options) (*fakedeepgram.Server, string) {
	t.Helper()
	fake := fakedeepgram.New(opts)
	ts := httptest.NewServer(fake)
	t.Cleanup(func() {
		ts.Close()
		fake.Close()
	})
	return fake, "ws" + strings.TrimPrefix(ts.URL, "http")
}

// httptestServer mounts h and returns its ws:// base; the server is closed when the test ends.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial opens /v1/listen with query and the given key ("" sends no Authorization).
func dial(ctx context.Context, t *testing.T, base, query, key string) *websocket.Conn {
	t.Helper()
	c, resp, err := dialRaw(ctx, base, query, key)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func dialRaw(ctx context.Context, base, query, key string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Token "+key)
	}
	return websocket.Dial(ctx, base+"/v1/listen?"+query, &websocket.DialOptions{HTTPHeader: h})
}

// sendFrames writes audio as binary messages of size bytes each.
func sendFrames(ctx context.Context, t *testing.T, c *websocket.Conn, audio []byte, size int) {
	t.Helper()
	for len(audio) > 0 {
		n := min(size, len(audio))
		if err := c.Write(ctx, websocket.MessageBinary, audio[:n]); err != nil {
			t.Fatalf("write audio: %v", err)
		}
		audio = audio[n:]
	}
}

func sendJSON(ctx context.Context, t *testing.T, c *websocket.Conn, typ string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"`+typ+`"}`)); err != nil {
		t.Fatalf("write %s: %v", typ, err)
	}
}

// msg is the union of the server messages' fields the tests look at.
type msg struct {
	Type         string  `json:"type"`
	ChannelIndex []int   `json:"channel_index"`
	Start        float64 `json:"start"`
	Duration     float64 `json:"duration"`
	IsFinal      bool    `json:"is_final"`
	SpeechFinal  bool    `json:"speech_final"`
	FromFinalize bool    `json:"from_finalize"`
	Channel      json.RawMessage
	Metadata     struct {
		RequestID string `json:"request_id"`
	} `json:"metadata"`
	LastWordEnd float64 `json:"last_word_end"`
	Timestamp   float64 `json:"timestamp"`
	RequestID   string  `json:"request_id"`
	SHA256      string  `json:"sha256"`
	Channels    int     `json:"channels"`

	Transcript string   `json:"-"`
	Words      []string `json:"-"`
}

// readMsg reads one text message and decodes it.
func readMsg(ctx context.Context, t *testing.T, c *websocket.Conn) (msg, error) {
	t.Helper()
	typ, data, err := c.Read(ctx)
	if err != nil {
		return msg{}, err
	}
	if typ != websocket.MessageText {
		t.Fatalf("server sent a %v message", typ)
	}
	var m msg
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("server sent bad JSON %q: %v", data, err)
	}
	if m.Type == "Results" {
		var ch struct {
			Alternatives []struct {
				Transcript string `json:"transcript"`
				Words      []struct {
					Word string `json:"word"`
				} `json:"words"`
			} `json:"alternatives"`
		}
		if err := json.Unmarshal(m.Channel, &ch); err != nil || len(ch.Alternatives) != 1 {
			t.Fatalf("Results without one alternative: %s (%v)", data, err)
		}
		m.Transcript = ch.Alternatives[0].Transcript
		for _, w := range ch.Alternatives[0].Words {
			m.Words = append(m.Words, w.Word)
		}
	}
	return m, nil
}

// readUntil reads messages until one of type typ (included) and returns them all.
func readUntil(ctx context.Context, t *testing.T, c *websocket.Conn, typ string) []msg {
	t.Helper()
	var out []msg
	for {
		m, err := readMsg(ctx, t, c)
		if err != nil {
			t.Fatalf("read while waiting for %s (after %d messages): %v", typ, len(out), err)
		}
		out = append(out, m)
		if m.Type == typ {
			return out
		}
	}
}

// summary renders messages compactly for comparisons.
func summary(ms []msg) []string {
	var out []string
	for _, m := range ms {
		s := m.Type
		if m.Type == "Results" {
			s += " final=" + boolStr(m.IsFinal) + " speech_final=" + boolStr(m.SpeechFinal) +
				" from_finalize=" + boolStr(m.FromFinalize) + " " + strconvQuote(m.Transcript)
		}
		out = append(out, s)
	}
	return out
}

func boolStr(b bool) string {
	if b {
		return "T"
	}
	return "F"
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
