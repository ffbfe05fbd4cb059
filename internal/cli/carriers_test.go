package cli

import (
	"context"
	"os"
	"testing"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// testCarrierEnv names one carrier to run the whole-call tests for (a quick run).
const testCarrierEnv = "HANDSET_TEST_CARRIER"

// forEachCarrier runs body once per registered carrier kit, as the subtest of its name:
// every carrier must pass the same whole-call scenarios. HANDSET_TEST_CARRIER picks one;
// -short runs Twilio's alone.
func forEachCarrier(t *testing.T, body func(t *testing.T, kit simkit.Kit)) {
	t.Helper()
	only := os.Getenv(testCarrierEnv)
	if only == "" && testing.Short() {
		only = "twilio"
	}
	ran := false
	for _, kit := range simkit.All() {
		if only != "" && kit.Name() != only {
			continue
		}
		ran = true
		t.Run(kit.Name(), func(t *testing.T) { body(t, kit) })
	}
	if !ran {
		t.Fatalf("%s=%s: no such carrier kit (have %v)", testCarrierEnv, only, simkit.Names())
	}
}

// startServeWith is startServe with the carrier of kit: a fake of its vendor is started
// for the test, and serve takes the vendor's settings (extra still overrides them).
func startServeWith(t *testing.T, kit simkit.Kit, transcripts []string, extra ...string) *rig {
	t.Helper()
	v, err := kit.Start(context.Background(), simkit.VendorOptions{Secret: "test-auth-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Error(err)
		}
	})
	r := startServe(t, transcripts, append(v.Settings(""), extra...)...)
	r.kit, r.vendor = kit, v
	return r
}

// call places an inbound call through the rig's carrier kit.
func (r *rig) call(ctx context.Context, opts simkit.CallOptions) phone.Phone {
	r.t.Helper()
	if r.vendor == nil {
		r.t.Fatal("rig.call needs a rig started by startServeWith")
	}
	c, err := r.vendor.Call(ctx, r.baseURL(), opts)
	if err != nil {
		r.t.Fatalf("call through %s: %v\n%s", r.kit.Name(), err, r.logs.String())
	}
	return c
}

// place is a default inbound call: through the rig's carrier kit when it has one, else as
// Twilio would (rig.dial).
func (r *rig) place(ctx context.Context) phone.Phone {
	r.t.Helper()
	if r.vendor != nil {
		return r.call(ctx, simkit.CallOptions{})
	}
	return r.dial(ctx)
}
