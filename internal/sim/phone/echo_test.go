package phone

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/g711"
)

func TestEchoMixClipsAndReadsThePlaybackBuffer(t *testing.T) {
	e := newEchoLine(EchoOptions{Delay: 20 * ms, GainDB: 6})
	loud := func(v int16) []byte { return bytes.Repeat([]byte{g711.EncodeMulawSample(v)}, pieceBytes) }
	// Loud caller plus louder echo saturates, in both directions, and never wraps.
	for _, v := range []int16{30000, -30000} {
		e.heard = nil
		e.played(piece{audio: loud(v), start: 0, end: 20 * ms})
		frame := loud(v)
		e.mix(frame, 20*ms, nil)
		for i, b := range frame {
			if got := g711.DecodeMulawSample(b); (v > 0 && got < 32000) || (v < 0 && got > -32000) {
				t.Fatalf("caller %d plus echo of %d gave %d at sample %d", v, v, got, i)
			}
		}
	}
	// A piece still in the playback buffer has played up to now: its start echoes.
	e.heard = nil
	frame := bytes.Repeat([]byte{g711.MulawSilence}, pieceBytes)
	e.mix(frame, 40*ms, []piece{{audio: loud(1000), start: 30 * ms, end: 50 * ms}})
	for i, b := range frame {
		if want := i >= pieceBytes/2; (b != g711.MulawSilence) != want {
			t.Fatalf("sample %d echoed %t, want %t", i, !want, want)
		}
	}
	// Pieces no later frame can reach are let go.
	for k := range 100 {
		e.played(piece{audio: loud(1000), start: time.Duration(k) * 20 * ms, end: time.Duration(k+1) * 20 * ms})
		e.mix(frame, time.Duration(k+1)*20*ms, nil)
	}
	if len(e.heard) > 2 {
		t.Fatalf("echo path holds %d pieces", len(e.heard))
	}
}

func TestEchoOptionsDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, DefaultEchoDelay}, {-time.Second, DefaultEchoDelay}, {5 * ms, 20 * ms}, {20 * ms, 20 * ms}, {250 * ms, 250 * ms},
	} {
		if got := (EchoOptions{Delay: tc.in}).withDefaults().Delay; got != tc.want {
			t.Errorf("Delay %v became %v, want %v", tc.in, got, tc.want)
		}
	}
	in := &EchoOptions{GainDB: -9}
	o := Options{Echo: in}.withDefaults()
	in.GainDB = 0
	if o.Echo == in || o.Echo.GainDB != -9 || o.Echo.Delay != DefaultEchoDelay {
		t.Fatalf("Options.withDefaults kept %+v, want its own copy with the default delay", o.Echo)
	}
	if (Options{}).withDefaults().Echo != nil {
		t.Fatal("echo on by default")
	}
	// A gain of -Inf silences the echo; NaN is treated the same.
	for _, g := range []float64{math.Inf(-1), math.NaN()} {
		if e := newEchoLine(EchoOptions{GainDB: g}); e.level != [256]int32{} {
			t.Errorf("gain %v dB gives a non-zero echo", g)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {62 * time.Microsecond, 0}, {63 * time.Microsecond, 1}, {-62 * time.Microsecond, 0}, {-63 * time.Microsecond, -1}, {-20 * ms, -160}} {
		if got := nearestSample(tc.d); got != tc.want {
			t.Errorf("nearestSample(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
