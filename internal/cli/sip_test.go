package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// freeSIPPort is a loopback port free for both UDP and TCP just now.
func freeSIPPort(t *testing.T) int {
	t.Helper()
	for range 50 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		u.Close()
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return 0
}

// startServeSIP runs serve with a SIP trunk on loopback that admits 127.0.0.1, and returns
// it with the trunk's address.
func startServeSIP(t *testing.T, transcripts []string, extra ...string) (*rig, netip.AddrPort) {
	t.Helper()
	port := freeSIPPort(t)
	r := startServe(t, transcripts, append([]string{
		"HANDSET_SIP_ALLOW=127.0.0.1",
		fmt.Sprintf("HANDSET_SIP_LISTEN=127.0.0.1:%d", port),
		"HANDSET_SIP_RTP_PORTS=33000-33999",
	}, extra...)...)
	return r, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
}

// loud reports whether a G.711 mu-law payload carries sound above -40 dBFS.
func loud(payload []byte) bool {
	return echo.LevelDB(g711.DecodeMulaw(make([]int16, len(payload)), payload)) > -40
}

// A call from a SIP trunk through `handset serve`: the greeting's RTP arrives as soon as
// the call is answered, the caller's question reaches the agent and its answer comes back
// as audio, and the journal holds the call as a SIP call the caller hung up.
func TestSIPWholeCall(t *testing.T) {
	r, trunk := startServeSIP(t, []string{"what are your opening hours"})
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, trunk, sipsim.CallOptions{From: "+15551230000", To: "+15557650000"})
	if err != nil {
		t.Fatalf("%v\n%s", err, r.logs.String())
	}
	pkts, err := call.WaitReceived(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if first := pkts[0].At.Sub(call.Answered); first > 100*time.Millisecond {
		t.Errorf("first RTP packet %v after the 200 OK, want within 100 ms", first)
	}
	greetingAt := waitLoud(ctx, t, call, 0)
	t.Logf("greeting's first loud packet %v after the 200 OK", greetingAt.Sub(call.Answered))

	// Once the greeting has played, the caller asks; the answer comes back as audio.
	r.waitEvent(obs.PlayoutDone, nil, 10*time.Second)
	q := speech(1200*time.Millisecond, 1)
	frames := make([][]byte, 0, len(q)/160+1)
	for i := 0; i+160 <= len(q); i += 160 {
		frames = append(frames, q[i:i+160])
	}
	silence := make([]byte, 160)
	for i := range silence {
		silence[i] = 0xFF
	}
	for range 50 { // a second of the caller's line after the question
		frames = append(frames, silence)
	}
	before := len(call.Received())
	if err := call.Play(ctx, frames); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == 1 }, 20*time.Second)
	waitLoud(ctx, t, call, before)

	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	events := r.journal()
	var start, end, answered, firstOut obs.Event
	var signals []string
	for _, e := range events {
		switch e.Type {
		case obs.CallStart:
			start = e
		case obs.CallEnd:
			end = e
		case obs.CarrierSignal:
			signals = append(signals, e.Kind+" "+e.Name)
			if e.Name == "200 OK" {
				answered = e
			}
		case obs.MediaFirstOut:
			firstOut = e
		}
	}
	if want := []string{"in INVITE", "out 180 Ringing", "out 200 OK", "in ACK", "in BYE"}; !slices.Equal(signals, want) {
		t.Errorf("signalling in the journal %q, want %q", signals, want)
	}
	if firstOut.TS.IsZero() || firstOut.TS.Sub(answered.TS) > 100*time.Millisecond {
		t.Errorf("media.first_out at %v, 200 OK at %v: want the first RTP packet within 100 ms", firstOut.TS, answered.TS)
	}
	if start.Carrier != "sip" {
		t.Errorf("call.start %+v does not name the sip carrier", start)
	}
	if end.Reason != "caller_hangup" {
		t.Errorf("call ended %q, want caller_hangup\n%s", end.Reason, dumpEvents(events))
	}
	reqs := r.agent.Requests()
	if len(reqs) == 0 || !strings.Contains(fmt.Sprint(reqs[len(reqs)-1]), "opening hours") {
		t.Errorf("the agent never got the caller's question: %v\n%s", reqs, dumpEvents(events))
	}
}

// waitLoud waits for a loud packet among those received after the first skip, and
// returns when it arrived.
func waitLoud(ctx context.Context, t *testing.T, call *sipsim.Call, skip int) time.Time {
	t.Helper()
	for n := skip + 1; ; n++ {
		pkts, err := call.WaitReceived(ctx, n)
		if err != nil {
			t.Fatalf("no audio from Handset: %v", err)
		}
		if p := pkts[n-1]; loud(p.Payload) {
			return p.At
		}
	}
}

// frames cuts mu-law audio into 20 ms payloads, followed by pad of line silence.
func frames(mulaw []byte, pad time.Duration) [][]byte {
	out := make([][]byte, 0, len(mulaw)/160+int(pad/(20*time.Millisecond)))
	for i := 0; i+160 <= len(mulaw); i += 160 {
		out = append(out, mulaw[i:i+160])
	}
	silence := bytes.Repeat([]byte{0xFF}, 160)
	for range int(pad / (20 * time.Millisecond)) {
		out = append(out, silence)
	}
	return out
}

// A caller who talks over a long reply stops it: Handset's RTP falls silent within a few
// frames of the clear, and the agent's history holds only the part of the reply that was
// sent before it, cut at a word.
func TestSIPBargeInStopsTheReply(t *testing.T) {
	r, trunk := startServeSIP(t, []string{"LONG tell me everything about the menu", "stop please"})
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, trunk, sipsim.CallOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, r.logs.String())
	}
	defer call.Hangup(ctx)
	r.waitEvent(obs.PlayoutDone, nil, 10*time.Second) // the greeting
	if err := call.Play(ctx, frames(speech(1200*time.Millisecond, 1), time.Second)); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(obs.PlayoutFirstAudio, func(e obs.Event) bool { return e.Turn == 1 }, 20*time.Second)
	time.Sleep(1500 * time.Millisecond) // the long reply is well under way
	if err := call.Play(ctx, frames(speech(1000*time.Millisecond, 2), 1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	clear := r.waitEvent(obs.Clear, nil, 20*time.Second)
	next := r.waitEvent(obs.PlayoutFirstAudio, func(e obs.Event) bool { return e.Turn == 2 }, 20*time.Second)
	// The call sends up to 80 ms ahead; a clear drops that at once. A packet on its way
	// when the queue was cleared may still land, and nothing after it.
	var late []time.Duration
	for _, p := range call.Received() {
		if p.At.After(clear.TS.Add(30*time.Millisecond)) && p.At.Before(next.TS) && loud(p.Payload) {
			late = append(late, p.At.Sub(clear.TS))
		}
	}
	if len(late) > 1 {
		t.Errorf("the interrupted reply was still heard after the clear, at %v", late)
	}
	reqs := r.agent.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the agent got %d requests, want 2", len(reqs))
	}
	reply := r.agent.ReplyText(reqs[0].Messages)
	var heard string
	for _, m := range reqs[1].Messages {
		if m.Role == "assistant" {
			heard = m.Content
		}
	}
	heard = strings.TrimSpace(strings.TrimSuffix(heard, voice.InterruptedMarker))
	if heard == "" || len(heard) >= len(reply) || !strings.HasPrefix(reply, heard) || reply[len(heard)] != ' ' {
		t.Errorf("the agent's history holds %q of the interrupted reply, want a prefix cut at a word of:\n%s", heard, reply)
	}
}
