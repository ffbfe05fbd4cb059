package sip

import (
	"context"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g722"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/sip/allow"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/voice"
)

// pcmSink keeps every frame the call hears.
type pcmSink struct {
	mu    sync.Mutex
	pcm   []byte
	sizes map[int]int // frames by length
	event chan struct{}
}

func (s *pcmSink) Audio(f []byte) {
	s.mu.Lock()
	s.pcm = append(s.pcm, f...)
	s.sizes[len(f)]++
	s.mu.Unlock()
	select {
	case s.event <- struct{}{}:
	default:
	}
}
func (s *pcmSink) Mark(string)     {}
func (s *pcmSink) DTMF(string)     {}
func (s *pcmSink) Malformed(error) {}

// tone5k is d of a 5 kHz tone as 16 kHz PCM16: above anything G.711 can carry.
func tone5k(d time.Duration) []byte {
	var pcm []byte
	for _, v := range audiotest.Tone(16000, 5000, d, 0.3) {
		pcm = append(pcm, byte(v), byte(uint16(v)>>8))
	}
	return pcm
}

// toneShareDB is the 5 kHz power over the whole power of pcm, in dB (0: a pure tone).
func toneShareDB(pcm []byte) float64 {
	s := make([]int16, len(pcm)/2)
	for i := range s {
		s[i] = int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
	}
	return 10 * math.Log10(audiotest.Goertzel(s, 16000, 5000)/math.Pow(10, audiotest.RMSDBFS(s)/10))
}

// A caller that offers only G.722 gets it: the answer names G722/8000, the leg speaks
// 16 kHz PCM16, RTP both ways carries G.722, and a 5 kHz tone crosses in both directions.
func TestG722CallIsWideband(t *testing.T) {
	sink := &pcmSink{sizes: map[int]int{}, event: make(chan struct{}, 1)}
	tr, legs := startWideTrunk(t, sink)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := newCaller(t).Call(ctx, tr.Addr(), sipsim.CallOptions{Codec: "G722"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = call.Hangup(ctx) }()
	if !strings.Contains(string(call.Answer), "a=rtpmap:9 G722/8000") {
		t.Fatalf("answer does not name G722/8000:\n%s", call.Answer)
	}
	leg := <-legs
	if f := leg.Info().Format; f != (audio.Format{Encoding: audio.PCM16, Rate: 16000}) {
		t.Fatalf("leg speaks %s, want pcm16/16000", f)
	}
	checkWidebandBothWays(ctx, t, call, leg, sink)
}

// A re-INVITE may not change the audio format the call speaks: one that offers only PCMU
// to a G.722 call is refused 488 and the call stays G.722; one that still offers G.722
// keeps it, whatever it prefers.
func TestReinviteKeepsTheCallsFormat(t *testing.T) {
	sink := &pcmSink{sizes: map[int]int{}, event: make(chan struct{}, 1)}
	tr, legs := startWideTrunk(t, sink)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := newCaller(t).Call(ctx, tr.Addr(), sipsim.CallOptions{Codec: "G722"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = call.Hangup(ctx) }()
	<-legs
	g722Offer := string(call.OfferSDP("sendrecv", 2))
	pcmuOnly := strings.NewReplacer("RTP/AVP 9 ", "RTP/AVP 0 ", "rtpmap:9 G722", "rtpmap:0 PCMU").Replace(g722Offer)
	if status, _, err := call.Reinvite(ctx, []byte(pcmuOnly)); err != nil || status != 488 {
		t.Fatalf("re-INVITE offering only PCMU to a G.722 call: %d %v, want 488", status, err)
	}
	both := strings.NewReplacer("RTP/AVP 9 ", "RTP/AVP 0 9 ", "a=rtpmap:9 G722/8000", "a=rtpmap:0 PCMU/8000\r\na=rtpmap:9 G722/8000").Replace(strings.Replace(g722Offer, "4242 2", "4242 3", 1))
	status, answer, err := call.Reinvite(ctx, []byte(both))
	if err != nil || status != 200 || !strings.Contains(string(answer), "G722/8000") || strings.Contains(string(answer), "PCMU") {
		t.Fatalf("re-INVITE offering PCMU then G722: %d %v, answer:\n%s\nwant 200 keeping G722 alone", status, err, answer)
	}
	before := len(call.Received())
	pkts, err := call.WaitReceived(ctx, before+5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts[before:] {
		if p.PayloadType != 9 {
			t.Fatalf("after the re-INVITEs Handset sends payload type %d, want G.722 (9)", p.PayloadType)
		}
	}
}

// startWideTrunk runs a trunk that allows PCMU, PCMA and G722 and runs every call it
// admits into sink; the legs come out of the channel.
func startWideTrunk(t *testing.T, sink *pcmSink) (*Trunk, <-chan voice.Leg) {
	t.Helper()
	list, err := allow.Parse("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	legs := make(chan voice.Leg, 1)
	admit := func(leg voice.Leg) (<-chan struct{}, error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = leg.Run(context.Background(), sink)
		}()
		legs <- leg
		return done, nil
	}
	tr, err := Start(Options{
		Listen: netip.MustParseAddrPort("127.0.0.1:0"), Transports: []string{"udp"},
		Allow: list, RTPLow: 32000, RTPHigh: 32999, Codecs: []sdp.Codec{sdp.PCMU, sdp.PCMA, sdp.G722},
	}, carrier.Inbound{Admit: admit, Draining: func() bool { return false },
		Memory: carriertest.NewMemory(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr, legs
}

// checkWidebandBothWays sends a 5 kHz tone each way of a G.722 call and checks it arrives.
func checkWidebandBothWays(ctx context.Context, t *testing.T, call *sipsim.Call, leg voice.Leg, sink *pcmSink) {
	t.Helper()
	// Handset to caller: the call's 16 kHz tone arrives as G.722 the caller can decode.
	if err := leg.SendAudio(ctx, tone5k(400*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	dec := g722.NewDecoder()
	var heard []byte
	for seen := 0; ; {
		pkts, err := call.WaitReceived(ctx, seen+1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts[seen:] {
			if p.PayloadType != 9 || len(p.Payload) != 160 {
				t.Fatalf("packet pt %d, %d bytes; want G.722 (9), 160", p.PayloadType, len(p.Payload))
			}
			frame := dec.Decode(nil, p.Payload)
			if toneShareDB(frame) > -1 {
				heard = append(heard, frame...)
			}
		}
		seen = len(pkts)
		if len(heard) >= 15*640 {
			break
		}
	}

	// Caller to Handset: the caller's G.722 tone reaches the call as 16 kHz PCM16.
	code := g722.NewEncoder().Encode(nil, tone5k(time.Second))
	var payloads [][]byte
	for f := 0; f < len(code); f += 160 {
		payloads = append(payloads, code[f:f+160])
	}
	if err := call.Play(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		sink.mu.Lock()
		frames, tonal := sink.sizes[640], 0
		for f := 0; f+640 <= len(sink.pcm); f += 640 {
			if toneShareDB(sink.pcm[f:f+640]) > -1 {
				tonal++
			}
		}
		odd := len(sink.sizes) > 1
		sink.mu.Unlock()
		if odd {
			t.Fatalf("the call got frames of sizes %v, want only 640", sink.sizes)
		}
		if tonal >= 45 {
			t.Logf("%d of %d frames carried the 5 kHz tone", tonal, frames)
			return
		}
		select {
		case <-sink.event:
		case <-deadline:
			t.Fatalf("after 10 s the call heard the 5 kHz tone in %d of %d frames, want >= 45 of the 50 sent", tonal, frames)
		}
	}
}
