package fakedeepgram_test

import (
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
)

// waitTotals polls the fake's totals until cond holds (Totals wake no WaitFor).
func waitTotals(t *testing.T, fake *fakedeepgram.Server, cond func(fakedeepgram.Totals) bool) fakedeepgram.Totals {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tot := fake.Totals()
		if cond(tot) {
			return tot
		}
		if time.Now().After(deadline) {
			t.Fatalf("totals %+v never met the condition", tot)
		}
		time.Sleep(time.Millisecond)
	}
}

// closeStream ends c as a client does: CloseStream, then read to the server's close.
func closeStream(t *testing.T, c *websocket.Conn) {
	t.Helper()
	ctx := testContext(t)
	sendJSON(ctx, t, c, "CloseStream")
	readUntil(ctx, t, c, "Metadata")
	if m, err := readMsg(ctx, t, c); err == nil {
		t.Fatalf("message %+v after Metadata, want the close", m)
	}
}

// TestLeanServerKeepsNoConnections: a lean server answers each connection exactly as a
// normal one, keeps no record of any, and still counts them all.
func TestLeanServerKeepsNoConnections(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Lean: true, Transcripts: []string{"Hello there, general Kenobi."}})
	ctx := testContext(t)
	f := audio.Telephone
	said := cat(silence(f, 200*ms), speech(f, time.Second), silence(f, 1500*ms))
	const conns = 3
	for i := range conns {
		c := dial(ctx, t, base, telephoneQuery+"&utterance_end_ms=1000&vad_events=true&tag=call"+itoa(i), "")
		sendFrames(ctx, t, c, said, f.FrameBytes())
		got := readUntil(ctx, t, c, "UtteranceEnd")
		want := []string{
			"SpeechStarted",
			`Results final=F speech_final=F from_finalize=F "Hello there,"`,
			`Results final=T speech_final=T from_finalize=F "Hello there, general Kenobi."`,
			"UtteranceEnd",
		}
		if diff := cmp.Diff(want, summary(got)); diff != "" {
			t.Fatalf("connection %d messages (-want +got):\n%s", i, diff)
		}
		closeStream(t, c)
	}
	if _, _, err := dialRaw(ctx, base, "encoding=opus", ""); err == nil {
		t.Fatal("a bad handshake was accepted")
	}
	tot := waitTotals(t, fake, func(tot fakedeepgram.Totals) bool { return tot.Open == 0 })
	want := fakedeepgram.Totals{
		Connections: conns, Rejected: 1, AudioBytes: conns * int64(len(said)),
		Interims: conns, Finals: conns, UtteranceEnds: conns,
	}
	if diff := cmp.Diff(want, tot); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if n := len(fake.Stats()); n != 0 {
		t.Errorf("lean server kept %d connection records", n)
	}
	if fake.Connections() != conns || fake.Rejected() != 1 {
		t.Errorf("Connections %d, Rejected %d", fake.Connections(), fake.Rejected())
	}
}

// TestTotalsMatchStats: without Lean the totals agree with the records.
func TestTotalsMatchStats(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"one two three"}})
	ctx := testContext(t)
	f := audio.Telephone
	c := dial(ctx, t, base, telephoneQuery, "")
	sendFrames(ctx, t, c, cat(speech(f, 500*ms), silence(f, 800*ms)), f.FrameBytes())
	closeStream(t, c)
	tot := waitTotals(t, fake, func(tot fakedeepgram.Totals) bool { return tot.Open == 0 })
	st := fake.Stats()
	if len(st) != 1 || tot.Connections != 1 || tot.AudioBytes != st[0].AudioBytes ||
		tot.Finals != len(st[0].Transcripts) || tot.Interims != len(st[0].Interims) || tot.Finals != 1 {
		t.Errorf("totals %+v for stats %+v", tot, st)
	}
}
