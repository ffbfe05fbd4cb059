package plivo_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// TestWholeStreamThroughTheFake: the caller's speech reaches Handset in order, Handset's
// reply plays and its checkpoint comes back once it has, and the caller's hang-up (a
// close: Plivo sends no stop) ends the call, whatever name answers checkpoints and
// whichever separator the extra headers come back with.
func TestWholeStreamThroughTheFake(t *testing.T) {
	cases := []struct {
		name   string
		stream plivosim.StreamOptions
	}{
		{"plain", plivosim.StreamOptions{}},
		{"60 ms chunks", plivosim.StreamOptions{ChunkMS: 60}},
		{"checkpoints answered as played", plivosim.StreamOptions{CheckpointEvent: plivosim.CheckpointPlayed}},
		{"extra headers joined by commas", plivosim.StreamOptions{HeaderSeparator: ","}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newWithFake(t, plivo.CodecMulaw, c.stream)
			p, leg, rec, done := f.ring(t)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if info := leg.Info(); info.Carrier != plivo.Name || info.From != caller || info.To != ourNumber || info.Direction != "inbound" {
				t.Errorf("leg info %+v", info)
			}
			said := tone(800) // 100 ms
			if err := p.SayAndWait(ctx, said); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the caller's speech", func(s *sink) bool { return len(receivedSpeech(s)) >= len(said) })
			rec.mu.Lock()
			got := receivedSpeech(rec)
			rec.mu.Unlock()
			if !bytes.Equal(got[:len(said)], said) {
				t.Fatal("speech arrived changed or out of order")
			}
			reply := tone(1600)
			if err := leg.SendAudio(ctx, reply); err != nil {
				t.Fatal(err)
			}
			if err := leg.SendMark(ctx, "t1-s1"); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the checkpoint played", func(s *sink) bool { return len(s.marks) == 1 && s.marks[0] == "t1-s1" })
			if played := p.Snapshot().PlayedAudio(); !bytes.Equal(played, reply) {
				t.Errorf("the caller heard %d bytes, want the reply's %d", len(played), len(reply))
			}
			if err := p.DTMF("5"); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the key", func(s *sink) bool { return len(s.digits) == 1 && s.digits[0] == "5" })
			if errs := p.Snapshot().ProtocolErrors(); len(errs) != 0 {
				t.Errorf("protocol errors: %v", errs)
			}
			if err := p.Hangup(); err != nil {
				t.Fatal(err)
			}
			ended(t, done)
			if n := p.Snapshot().Count(phone.StopSent); n != 0 {
				t.Errorf("the caller sent %d stops; Plivo sends none", n)
			}
			call, err := f.fake.WaitCall(ctx, p.Ref(), func(c plivosim.Call) bool { return plivosim.Ended(c.Status) })
			if err != nil || call.HangupSource != "Caller" {
				t.Errorf("fake call %+v, %v", call, err)
			}
		})
	}
}

// TestCheckpointAnsweredOnlyWhenPlayed: Plivo never answers a checkpoint a clear dropped,
// so the leg reports it at Clear, once; a late answer for it is dropped, and clearedAudio
// is taken quietly.
func TestCheckpointAnsweredOnlyWhenPlayed(t *testing.T) {
	f := newWithFake(t, plivo.CodecMulaw, plivosim.StreamOptions{})
	p, leg, rec, _ := f.ring(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := leg.SendAudio(ctx, tone(8000*5)); err != nil { // five seconds: still playing at the clear
		t.Fatal(err)
	}
	for _, m := range []string{"a", "b"} {
		if err := leg.SendMark(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return len(s.Marks()) == 2 }); err != nil {
		t.Fatal(err)
	}
	if err := leg.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the cleared checkpoints", func(s *sink) bool { return len(s.marks) == 2 })
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Clears() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := p.SendRaw(`{"event":"playedStream","streamId":"x","name":"a"}`); err != nil { // late
		t.Fatal(err)
	}
	if err := p.DTMF("7"); err != nil { // a marker after the late answer and clearedAudio
		t.Fatal(err)
	}
	rec.waitFor(t, "the marker", func(s *sink) bool { return len(s.digits) == 1 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := strings.Join(rec.marks, ","); got != "a,b" {
		t.Errorf("marks %q, want a,b", got)
	}
	if len(rec.malformed) != 0 {
		t.Errorf("malformed: %v", rec.malformed)
	}
	for _, m := range p.Snapshot().Marks() {
		if m.Echoed && !m.Cleared {
			t.Errorf("the fake answered checkpoint %s, which never played", m.Name)
		}
	}
}

// TestCheckpointEchoNames: playedStream and played both report a checkpoint; an answer
// to a checkpoint never sent and an event Plivo does not send are counted malformed, and
// the call goes on.
func TestCheckpointEchoNames(t *testing.T) {
	f := newWithFake(t, plivo.CodecMulaw, plivosim.StreamOptions{})
	p, leg, rec, _ := f.ring(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, m := range []string{"one", "two"} {
		if err := leg.SendMark(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Count(phone.MarkEchoed) == 2 }); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the played checkpoints", func(s *sink) bool { return len(s.marks) == 2 })
	if err := leg.SendMark(ctx, "three"); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		`{"event":"played","streamId":"x","name":"three"}`,
		`{"event":"playedStream","streamId":"x","name":"never-sent"}`,
		`{"event":"playedAudio","streamId":"x","name":"three"}`,
	} {
		if err := p.SendRaw(raw); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFor(t, "two malformed", func(s *sink) bool { return len(s.malformed) == 2 })
	rec.waitFor(t, "three marks", func(s *sink) bool { return len(s.marks) == 3 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := strings.Join(rec.marks, ","); got != "one,two,three" {
		t.Errorf("marks %q", got)
	}
}

// TestNoStopFrame: the socket's close ends the call, and the hangup callback leaves the
// same record whether it comes before the close (Plivo ends the call) or after it (the
// caller hangs up).
func TestNoStopFrame(t *testing.T) {
	records := map[string]carrier.Progress{}
	for _, order := range []string{"callback first", "close first"} {
		t.Run(order, func(t *testing.T) {
			f := newWithFake(t, plivo.CodecMulaw, plivosim.StreamOptions{})
			p, _, _, done := f.ring(t)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if order == "callback first" {
				if err := f.fake.Hangup(p.Ref(), "Caller"); err != nil {
					t.Fatal(err)
				}
			} else if err := p.Hangup(); err != nil {
				t.Fatal(err)
			}
			ended(t, done)
			if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Ended }); err != nil {
				t.Fatal(err)
			}
			if n := p.Snapshot().Count(phone.StopSent); n != 0 {
				t.Errorf("%d stops sent", n)
			}
			call, err := f.fake.WaitCall(ctx, p.Ref(), func(c plivosim.Call) bool {
				return len(c.Callbacks) > 0 && c.Callbacks[len(c.Callbacks)-1].Kind == "hangup"
			})
			if err != nil {
				t.Fatal(err)
			}
			if cb := call.Callbacks[len(call.Callbacks)-1]; cb.Status/100 != 2 {
				t.Fatalf("the hangup callback got %d", cb.Status)
			}
			got, ok, err := f.memory.Progress(ctx, p.Ref())
			if err != nil || !ok {
				t.Fatalf("no record: %v", err)
			}
			got.Duration = 0 // a second either way
			records[order] = got
		})
	}
	if a, b := records["callback first"], records["close first"]; a.Status != carrier.StatusCompleted || a.Status != b.Status || a.Declined != b.Declined {
		t.Errorf("records differ: %+v and %+v", a, b)
	}
}

// TestPlayAudioDeclaresFormat: every playAudio names the stream's contentType and
// sampleRate (the fake refuses one that does not); L16 at 16 kHz both ways.
func TestPlayAudioDeclaresFormat(t *testing.T) {
	f := newWithFake(t, plivo.CodecL16, plivosim.StreamOptions{})
	p, leg, rec, _ := f.ring(t)
	if got := leg.Info().Format; got.Rate != 16000 {
		t.Fatalf("format %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.SayAndWait(ctx, tone(800)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "speech", func(s *sink) bool {
		for _, f := range s.audio {
			for i := 0; i+1 < len(f); i += 2 {
				if v := int16(f[i]) | int16(f[i+1])<<8; v > 2000 || v < -2000 {
					return true
				}
			}
		}
		return false
	})
	reply := make([]byte, 6400) // 200 ms of 16 kHz L16
	for i := 0; i < len(reply); i += 2 {
		reply[i], reply[i+1] = 0x00, 0x20
	}
	if err := leg.SendAudio(ctx, reply); err != nil {
		t.Fatal(err)
	}
	if err := leg.SendMark(ctx, "end"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "the checkpoint", func(s *sink) bool { return len(s.marks) == 1 })
	if errs := p.Snapshot().ProtocolErrors(); len(errs) != 0 {
		t.Errorf("protocol errors: %v", errs)
	}
	if played := p.Snapshot().PlayedAudio(); len(played) != 1600 { // 200 ms as the phone keeps it: 8 kHz mu-law
		t.Errorf("the caller heard %d bytes, want 1600", len(played))
	}
}

// TestStreamRefusesAnotherFormat: a start whose media is not what the <Stream> asked for
// (Plivo's default L16 at 8 kHz, say, had the contentType been lost) is closed with why.
func TestStreamRefusesAnotherFormat(t *testing.T) {
	f := newWithFake(t, plivo.CodecMulaw, plivosim.StreamOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.url, "http")+plivo.StreamPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	start := `{"event":"start","sequenceNumber":1,"start":{"callId":"6b1d3c5e-0000-4000-8000-000000000003","streamId":"s1",` +
		`"mediaFormat":{"encoding":"audio/x-l16","sampleRate":8000}},"extra_headers":"handsettoken=abc"}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(start)); err != nil {
		t.Fatal(err)
	}
	_, _, err = conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "unsupported media format") {
		t.Errorf("read after a start in L16: %v", err)
	}
}
