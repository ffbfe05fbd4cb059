package plivo_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/voice"
)

// settingsMap is the registry's settings as a map.
type settingsMap map[string]string

func (m settingsMap) Value(env string) string       { return m[env] }
func (m settingsMap) Duration(string) time.Duration { return 0 }
func (m settingsMap) Int(string) int                { return 0 }
func (m settingsMap) Bool(string) bool              { return false }
func (m settingsMap) Source(string) string          { return "test" }

// kitRig is Handset's Plivo carrier mounted from the settings the kit gives, with an
// answering call on every leg: a greeting and its checkpoint, then listening.
type kitRig struct {
	vendor   simkit.Vendor
	url      string
	settings settingsMap
	memory   *carriertest.Memory
	legs     chan voice.Leg
	progress chan carrier.Progress
}

func newKitRig(t *testing.T, o simkit.VendorOptions) *kitRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	v, err := plivosim.Kit.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	k := &kitRig{vendor: v, memory: carriertest.NewMemory(), legs: make(chan voice.Leg, 8), progress: make(chan carrier.Progress, 64)}
	var handset http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handset.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	k.url = hs.URL
	k.settings = settingsMap{"HANDSET_PUBLIC_URL": hs.URL}
	for _, kv := range v.Settings(hs.URL) {
		key, val, _ := strings.Cut(kv, "=")
		k.settings[key] = val
	}
	mux := http.NewServeMux()
	err = plivo.Provider.Mount(mux, carrier.Inbound{PublicURL: hs.URL, Memory: k.memory,
		Admit: func(l voice.Leg) (<-chan struct{}, error) {
			k.legs <- l
			done := make(chan struct{})
			go func() {
				defer close(done)
				ended := make(chan error, 1)
				go func() { ended <- l.Run(context.Background(), newSink()) }()
				_ = l.SendAudio(context.Background(), tone(1600))
				_ = l.SendMark(context.Background(), "greeting")
				<-ended
			}()
			return done, nil
		},
		OnProgress: func(p carrier.Progress) { k.progress <- p },
	}, k.settings)
	if err != nil {
		t.Fatal(err)
	}
	handset = mux
	return k
}

func TestKitSettingsConfigureHandset(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{Secret: "s3cretToken", Numbers: []string{"+15550100777"}})
	if !plivo.Provider.Configured(k.settings) || k.settings["PLIVO_AUTH_TOKEN"] != "s3cretToken" ||
		k.settings["HANDSET_PHONE_NUMBER"] != "+15550100777" || k.settings["PLIVO_APP_ID"] == "" {
		t.Fatalf("settings %v", k.settings)
	}
}

func TestKitInboundCall(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := k.vendor.Call(ctx, k.url, simkit.CallOptions{From: "+15550100123"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool {
		m := s.Marks()
		return len(m) == 1 && m[0].Echoed
	}); err != nil {
		t.Fatal(err)
	}
	if got := p.Snapshot().PlayedAudio(); !bytes.Equal(got, tone(1600)) {
		t.Errorf("heard %d bytes of greeting", len(got))
	}
	leg := <-k.legs
	if info := leg.Info(); info.From != "+15550100123" || info.CarrierRef != p.Ref() || info.Direction != voice.Inbound {
		t.Errorf("leg %+v", info)
	}
	if err := p.Hangup(); err != nil {
		t.Fatal(err)
	}
}

func TestKitForgeriesAreRefused(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{})
	forgeries := k.vendor.Forgeries(k.url)
	if len(forgeries) < 8 {
		t.Fatalf("%d forgeries", len(forgeries))
	}
	for _, f := range forgeries {
		t.Run(f.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
			defer cancel()
			got, err := f.Send(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Want.Matches(got) {
				t.Fatalf("Handset answered %+v, want %+v", got, f.Want)
			}
		})
	}
}

func TestKitReplayIsRefused(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	if err := k.vendor.Replay(ctx, k.url); err != nil {
		t.Fatal(err)
	}
}

// TestKitOutboundCalls: Handset's control dials through the fake; the callee's outcome
// reaches the ledger through the callbacks, an answered call streams, and a machine under
// policy hangup is hung up on.
func TestKitOutboundCalls(t *testing.T) {
	answers := map[string]simkit.Callee{
		"+15550100501": {Outcome: simkit.Person, Hold: 300 * time.Millisecond},
		"+15550100502": {Outcome: simkit.Busy},
		"+15550100503": {Outcome: simkit.Machine},
	}
	k := newKitRig(t, simkit.VendorOptions{Answer: func(to string) simkit.Callee { return answers[to] }})
	ctl, err := plivo.Provider.New(registry.Build{Settings: k.settings, Memory: func(string) carrier.Memory { return k.memory }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	want := map[string]carrier.Status{"+15550100501": carrier.StatusCompleted, "+15550100502": carrier.StatusBusy, "+15550100503": carrier.StatusCompleted}
	for n, to := range []string{"+15550100501", "+15550100502", "+15550100503"} {
		policy := carrier.MachineTalk
		if to == "+15550100503" {
			policy = carrier.MachineHangup
		}
		call, err := ctl.Dial(ctx, carrier.Dial{CallID: voice.CallID("call-" + to[1:]), To: to, From: k.settings["HANDSET_PHONE_NUMBER"], PublicURL: k.url, OnMachine: policy})
		if err != nil {
			t.Fatalf("dial %s: %v", to, err)
		}
		oc, err := k.vendor.WaitCall(ctx, n+1)
		if err != nil || oc.Ref != call.Ref {
			t.Fatalf("vendor's call %d: %+v %v", n+1, oc, err)
		}
		for {
			got, err := ctl.Call(ctx, call.Ref)
			if err != nil {
				t.Fatalf("%s: %v", to, err)
			}
			if got.Status.Ended() {
				if got.Status != want[to] {
					t.Errorf("%s ended %s, want %s", to, got.Status, want[to])
				}
				if to == "+15550100503" && !got.AnsweredBy.Machine() {
					t.Errorf("%s answered by %q, want a machine", to, got.AnsweredBy)
				}
				break
			}
			select {
			case <-k.progress:
			case <-ctx.Done():
				t.Fatalf("%s never ended: %+v", to, got)
			}
		}
	}
	if calls := k.vendor.Calls(); len(calls) != 3 || calls[0].Status != "completed" || calls[1].Status != "busy" {
		t.Errorf("vendor's calls %+v", calls)
	}
	select {
	case leg := <-k.legs:
		if info := leg.Info(); info.Direction != voice.Outbound || info.CallID != "call-15550100501" {
			t.Errorf("outbound leg %+v", info)
		}
	default:
		t.Error("the answered outbound call never streamed")
	}
}

// TestKitMachineMessageStreams: under policy message a machine's call is held silent until
// the verdict, then streamed by REST with the verdict in the leg (the message waits for
// the greeting's end in the call, since Plivo reports no beep).
func TestKitMachineMessageStreams(t *testing.T) {
	const to = "+15550100504"
	k := newKitRig(t, simkit.VendorOptions{Answer: func(string) simkit.Callee { return simkit.Callee{Outcome: simkit.Voicemail, Hold: 2 * time.Second} }})
	ctl, err := plivo.Provider.New(registry.Build{Settings: k.settings, Memory: func(string) carrier.Memory { return k.memory }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := ctl.Dial(ctx, carrier.Dial{CallID: "call-vm", To: to, From: k.settings["HANDSET_PHONE_NUMBER"], PublicURL: k.url, OnMachine: carrier.MachineMessage}); err != nil {
		t.Fatal(err)
	}
	select {
	case leg := <-k.legs:
		if info := leg.Info(); info.CallID != "call-vm" || info.Direction != voice.Outbound || !carrier.AnsweredBy(info.AnsweredBy).Machine() {
			t.Errorf("leg %+v", info)
		}
	case <-ctx.Done():
		t.Fatal("the machine's call never streamed")
	}
}
