package twiliokit

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

func TestVendorServesTheFakeAPIWithItsSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := Kit.Start(ctx, simkit.VendorOptions{Secret: "s3cret", Numbers: []string{"+15550100777"}})
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, kv := range v.Settings("https://example.test") {
		k, val, _ := strings.Cut(kv, "=")
		settings[k] = val
	}
	if settings["TWILIO_AUTH_TOKEN"] != "s3cret" || settings["HANDSET_PHONE_NUMBER"] != "+15550100777" || v.Secret() != "s3cret" {
		t.Fatalf("settings %v", settings)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, settings["HANDSET_TWILIO_API_URL"]+"/2010-04-01/Accounts/"+settings["TWILIO_ACCOUNT_SID"]+".json", nil)
	req.SetBasicAuth(settings["TWILIO_ACCOUNT_SID"], "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the account with the settings' credentials: %d", resp.StatusCode)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the fake API still answers after Close")
	}
}

func TestGeneratedSecretsDiffer(t *testing.T) {
	ctx := context.Background()
	a, err := Kit.Start(ctx, simkit.VendorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Kit.Start(ctx, simkit.VendorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Secret() == "" || a.Secret() == b.Secret() {
		t.Fatalf("secrets %q and %q", a.Secret(), b.Secret())
	}
}

func TestWithheldAndAttestedCallersAsTwilioShowsThem(t *testing.T) {
	v := &vendor{opts: simkit.VendorOptions{Numbers: []string{DefaultNumber}}, tw: faketwilio.New(faketwilio.Options{})}
	t.Cleanup(v.tw.Close)
	params := map[string]string{"CallerName": "Alice"}
	o := v.callerOptions("http://h", simkit.CallOptions{From: "+15550100001", Withheld: true, Attestation: "B", Params: params})
	if o.From != "anonymous" || o.Params["StirVerstat"] != "TN-Validation-Passed-B" || o.Params["CallerName"] != "Alice" {
		t.Fatalf("caller options %+v", o)
	}
	if _, ok := params["StirVerstat"]; ok {
		t.Error("the test's parameters were changed")
	}
	if o := v.callerOptions("http://h", simkit.CallOptions{From: "+15550100001"}); o.From != "+15550100001" || o.Params["StirVerstat"] != "" || o.Silent {
		t.Fatalf("an ordinary caller's options %+v", o)
	}
	v.opts.Silent = true
	if o := v.callerOptions("http://h", simkit.CallOptions{}); !o.Silent {
		t.Fatal("a silent vendor's caller is not silent")
	}
}

func TestFramesTwilioNeverSendsAreRefused(t *testing.T) {
	for _, o := range []simkit.VendorOptions{{Frame: 60 * time.Millisecond}, {EarlyFrames: 2}} {
		if v, err := Kit.Start(context.Background(), o); !errors.Is(err, simkit.ErrUnsupported) {
			if v != nil {
				_ = v.Close()
			}
			t.Errorf("Start(%+v) = %v, want ErrUnsupported", o, err)
		}
	}
}
