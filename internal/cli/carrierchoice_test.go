package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

// The number commands and setup take --carrier: a carrier of this binary works as its
// default does, any other name is a usage error that lists the carriers.
func TestNumberCommandsTakeACarrier(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers}, "HANDSET_PUBLIC_URL="+twPublic)
	out, _, err := twRun(t, runNumbers, environ, "--carrier", "twilio")
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "numbers --carrier twilio", out, "Twilio account", "5 numbers")
	if _, _, err := twRun(t, runAttachNumber, environ, "+14155550103", "--carrier", "twilio"); err != nil {
		t.Fatal(err)
	}
	if n, _ := fake.Number("+14155550103"); n.VoiceURL != twPublic+"/twilio/voice" {
		t.Errorf("attach-number --carrier twilio left the voice URL %q", n.VoiceURL)
	}

	for _, c := range []struct {
		name string
		run  func(context.Context, Env, []string) error
		args []string
	}{
		{"numbers", runNumbers, []string{"--carrier", "pigeon"}},
		{"attach-number", runAttachNumber, []string{"+14155550103", "--carrier", "pigeon"}},
		{"setup", runSetup, []string{"--runtime", "hermes", "--carrier", "pigeon"}},
	} {
		var ue *usageError
		if _, _, err := twRun(t, c.run, environ, c.args...); !errors.As(err, &ue) ||
			!strings.Contains(err.Error(), `--carrier "pigeon" is not a carrier: one of twilio`) {
			t.Errorf("%s --carrier pigeon: %v, want a usage error listing the carriers", c.name, err)
		}
	}

	// HANDSET_CARRIER naming no carrier is refused as any bad choice is.
	_, _, err = twRun(t, runNumbers, append(environ, "HANDSET_CARRIER=pigeon"))
	if err == nil || !strings.Contains(err.Error(), `HANDSET_CARRIER (carrier): "pigeon" is not one of twilio`) {
		t.Errorf("HANDSET_CARRIER=pigeon: %v", err)
	}
}

// .env.example has a block for each carrier that declares its settings: what to fill in,
// and the settings with a default left commented out; a carrier declaring none adds nothing.
func TestCarrierEnvBlocks(t *testing.T) {
	line := registry.Carrier{About: registry.About{Title: "Line"}, Numbers: registry.Numbers{Console: "the Line portal"},
		Declares: []registry.CarrierSetting{
			{Env: "LINE_KEY", Kind: registry.SettingSecret},
			{Env: "HANDSET_LINE_URL", Kind: registry.SettingURL, Default: "https://api.line.example"},
			{Env: "LINE_APP"},
		}}
	got := carrierEnvBlocks([]registry.Carrier{{About: registry.About{Title: "Plain"}}, line})
	want := "\n# Line, instead of Twilio or beside it: the account's settings from the Line portal.\n" +
		"LINE_KEY=\nLINE_APP=\n# HANDSET_LINE_URL=https://api.line.example\n"
	if got != want {
		t.Errorf("blocks:\n%s\nwant:\n%s", got, want)
	}
	if names := carrierAccountNames(line); strings.Join(names, ",") != "LINE_KEY,LINE_APP" {
		t.Errorf("account settings %v", names)
	}
	if got := carrierEnvBlocks(registry.All[registry.Carrier]()); strings.Contains(got, "TWILIO") {
		t.Errorf("Twilio's settings have their own block, not one of these:\n%s", got)
	}
}
