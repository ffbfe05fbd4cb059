package plivo_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/voice"
)

// hooked is an env whose Handset side is Hooks, recording what OnProgress hears.
type hooked struct {
	env
	tokens *mediastream.Tokens
	mu     sync.Mutex
	heard  []carrier.Progress
}

func newHooked(t *testing.T, o plivosim.Options) *hooked {
	e := newEnv(t, account(), carriertest.FaultNone, o)
	hk := &hooked{env: e, tokens: mediastream.NewTokens("secret", plivo.Name, mediastream.EncodingAlphanumeric)}
	hooks := &plivo.Hooks{Verifier: plivo.Verifier{AuthToken: e.fake.AuthToken(), PublicURL: e.PublicURL, Memory: e.memory},
		Tokens: hk.tokens, Control: e.control, OnProgress: func(p carrier.Progress) {
			hk.mu.Lock()
			defer hk.mu.Unlock()
			hk.heard = append(hk.heard, p)
		}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+plivo.AnswerPath, hooks.Answer)
	mux.HandleFunc("POST "+plivo.HangupPath, hooks.Progress)
	mux.HandleFunc("POST "+plivo.MachinePath, hooks.Progress)
	e.handset.routes = mux
	return hk
}

func (hk *hooked) dial(t *testing.T, policy carrier.MachinePolicy) (carrier.Call, voice.CallID) {
	t.Helper()
	id := voice.NewCallID()
	c, err := hk.control.Dial(ctxOf(t), carrier.Dial{CallID: id, To: callee, From: ours, PublicURL: hk.PublicURL, OnMachine: policy})
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

// checkToken: the stream order carries a token for the call, saying what Plivo said.
func (hk *hooked) checkToken(t *testing.T, o plivosim.StreamOrder, id voice.CallID) {
	t.Helper()
	claims, err := hk.tokens.Verify(o.Headers[plivo.TokenHeader], o.CallUUID, time.Now())
	if err != nil || claims.CallID != string(id) || claims.From != ours || claims.To != callee || claims.Direction != "outbound" {
		t.Errorf("stream token: %+v, %v", claims, err)
	}
	if o.URL != "ws"+hk.PublicURL[len("http"):]+plivo.StreamPath || !o.KeepCallAlive || o.ContentType != plivo.ContentMulaw8k {
		t.Errorf("stream order %+v", o)
	}
}

// TestAnswerStreams: without detection the answer document streams at once, with a
// token for the call.
func TestAnswerStreams(t *testing.T) {
	hk := newHooked(t, plivosim.Options{})
	placed, id := hk.dial(t, carrier.MachineTalk)
	c, err := hk.fake.WaitCall(ctxOf(t), placed.Ref, func(c plivosim.Call) bool { return len(c.Streams) > 0 || plivosim.Ended(c.Status) })
	if err != nil || len(c.Streams) != 1 {
		t.Fatalf("%+v, %v", c, err)
	}
	hk.checkToken(t, c.Streams[0], id)
	if got, err := hk.control.Call(ctxOf(t), placed.Ref); err != nil || got.Status != carrier.StatusInProgress {
		t.Errorf("Call: %+v, %v", got, err)
	}
}

// TestAsyncMachineVerdict: the verdict comes after the answer document was fetched; under
// policy hangup a machine is hung up on (declined) and a person gets the stream.
func TestAsyncMachineVerdict(t *testing.T) {
	for _, machine := range []bool{true, false} {
		hk := newHooked(t, plivosim.Options{MachineDelay: 50 * time.Millisecond,
			Callee: func(string) plivosim.Callee { return plivosim.Callee{Machine: machine} }})
		ctx := ctxOf(t)
		placed, id := hk.dial(t, carrier.MachineHangup)
		if !machine {
			c, err := hk.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool {
				return (len(c.Streams) > 0 && c.Verdict != "") || plivosim.Ended(c.Status)
			})
			if err != nil || len(c.Streams) != 1 || c.Verdict != "false" {
				t.Fatalf("person: %+v, %v", c, err)
			}
			hk.checkToken(t, c.Streams[0], id)
			continue
		}
		// The verdict is the fake's once Handset answered its callback, after telling
		// OnProgress; the hang-up it caused may be over sooner.
		c, err := hk.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) && c.Verdict != "" })
		if err != nil || c.HangupSource != "API" || len(c.Streams) != 0 {
			t.Fatalf("machine: %+v, %v; want hung up by Handset before any stream", c, err)
		}
		hk.mu.Lock()
		declined := false
		for _, p := range hk.heard {
			declined = declined || (p.Declined && p.CallID == id && p.AnsweredBy.Machine())
		}
		hk.mu.Unlock()
		if !declined {
			t.Errorf("OnProgress never heard the call declined: %+v", hk.heard)
		}
		if got, err := hk.control.Call(ctx, placed.Ref); err != nil || !got.AnsweredBy.Machine() || !got.Status.Ended() {
			t.Errorf("Call: %+v, %v", got, err)
		}
	}
}

// TestExtraHeadersTokenFits: the longest numbers and ids still make a token that fits
// Plivo's 512 bytes of extraHeaders, letters and digits only.
func TestExtraHeadersTokenFits(t *testing.T) {
	tokens := mediastream.NewTokens("secret", plivo.Name, mediastream.EncodingAlphanumeric)
	longest := "+" + strings.Repeat("9", 15)
	token, err := tokens.Mint(mediastream.Claims{CallRef: strings.Repeat("f", 36), From: longest, To: longest, Direction: "outbound",
		CallID: string(voice.NewCallID()), AnsweredBy: string(carrier.AnsweredOther)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plivo.StreamXML(plivo.Stream{URL: "wss://h.example.com/plivo/stream", Token: token}); err != nil {
		t.Errorf("a %d-character token: %v", len(token), err)
	}
}
