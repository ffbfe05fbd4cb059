//go:build embedded

package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// A real SIP phone (baresip), registered with a real proxy (kamailio), calls Handset on
// its trunk with no cloud at all: the greeting's RTP arrives as soon as the call is
// answered, the question baresip plays is recognised and reaches the agent, and the
// greeting and the answer are heard: baresip's recording holds them, and PocketSphinx
// hears the answer's words in it.
func TestBaresipCallsHandsetThroughKamailio(t *testing.T) {
	testpeer.Slow(t, "a real-time call between baresip, kamailio and handset serve")
	r, trunk := startServeSIP(t, nil, "HANDSET_STT=sphinx", "HANDSET_TTS=flite", "HANDSET_SPHINX_DECODERS=1",
		"HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t), "HANDSET_FIRST_MESSAGE=Hello, how can I help you today?")
	source := writeBaresipQuestion(t, t.TempDir(), 8000)
	k, err := sippeer.StartKamailio(t, sippeer.KamailioOptions{Users: map[string]string{"alice": "s3cret-pw"}, Target: trunk.String()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, User: "alice", Registrar: k.Addr(), Password: "s3cret-pw"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := b.WaitRegistered(ctx); err != nil {
		t.Fatalf("%v\n%s\n%s", err, b.Log(), k.Log())
	}
	if err := b.Dial("sip:handset@" + k.Addr()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nkamailio:\n%s\nhandset:\n%s", err, b.Log(), k.Log(), r.logs.String())
	}
	finishBaresipCall(t, ctx, r, b, 8000, "through kamailio")
	wait, err := b.AnswerToFirstRTP()
	if err != nil {
		t.Fatalf("%v\nevents: %v", err, b.Events())
	}
	t.Logf("first RTP %v after baresip learned of the answer", wait)
	if wait > 100*time.Millisecond {
		t.Errorf("the first RTP packet came %v after the answer, want within 100 ms", wait)
	}
	if os.Getenv("HANDSET_TEST_VERBOSE") != "" {
		t.Log(dumpEvents(r.journal()))
	}
}

// longWords are the words of more than three letters: the ones a recogniser gets right.
func longWords(words []string) []string {
	var out []string
	for _, w := range words {
		w = strings.Trim(w, ".,!?")
		if len(w) > 3 {
			out = append(out, w)
		}
	}
	return out
}

// recognise is what PocketSphinx hears in speech at rate Hz (8 or 16 kHz).
func recognise(t *testing.T, pcm []int16, rate int) string {
	t.Helper()
	rec, err := sphinx.New(sphinx.Options{Decoders: 1})
	if err != nil {
		testpeer.Missing(t, testpeer.SphinxEnUS, err)
	}
	defer rec.Close()
	f := audio.Format{Encoding: audio.PCM16, Rate: rate}
	s, err := rec.Stream(context.Background(), f, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	}
	var words []string
	results, finals := make(chan struct{}), make(chan struct{}, 64)
	go func() {
		defer close(results)
		for tr := range s.Results() {
			if tr.Final && tr.Text != "" {
				words = append(words, tr.Text)
				finals <- struct{}{}
			}
		}
	}()
	for fb := f.FrameBytes(); len(b) > 0; {
		n := min(fb, len(b))
		if err := s.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
		time.Sleep(10 * time.Millisecond) // twice real time: the decoder keeps up, nothing is dropped
	}
	before := len(finals)
	_ = s.Finalize()
	for len(finals) == before { // the last utterance's final
		select {
		case <-time.After(10 * time.Second):
			t.Log("sphinx: no final for the last utterance")
		case <-results:
		default:
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}
	_ = s.Close()
	<-results
	return strings.Join(words, " ")
}

// writePCM16WAVAt writes pcm at rate as a 16-bit mono WAV file.
func writePCM16WAVAt(path string, rate int, pcm []int16) error {
	var buf bytes.Buffer
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	}
	if err := wav.Write(&buf, audio.Format{Encoding: audio.PCM16, Rate: rate}, b); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

func readPCM16WAV(t *testing.T, path string) ([]int16, int) {
	t.Helper()
	f, data, err := wav.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Encoding != audio.PCM16 {
		t.Fatalf("%s is %v, want 16-bit PCM", path, f.Encoding)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
	}
	return pcm, f.Rate
}
