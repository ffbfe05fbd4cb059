package carriertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
)

func testAccount(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	a, err := env.Carrier.Account(ctxOf(t))
	if err != nil || a.ID == "" {
		t.Errorf("Account: %+v, %v", a, err)
	}
}

func testNumbers(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	ns, err := env.Carrier.Numbers(ctxOf(t))
	if err != nil {
		t.Fatalf("Numbers: %v", err)
	}
	var got []string
	for _, n := range ns {
		if n.Ref == "" {
			t.Errorf("number %s has no reference", n.PhoneNumber)
		}
		got = append(got, n.PhoneNumber)
	}
	slices.Sort(got)
	if want := account().Numbers; !slices.Equal(got, want) {
		t.Errorf("Numbers = %v, want %v", got, want)
	}
}

func testNumberFound(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	n, err := env.Carrier.Number(ctxOf(t), "+1 (415) 555-0111")
	if err != nil || n.PhoneNumber != otherNumber || n.Ref == "" {
		t.Errorf("Number: %+v, %v; want %s", n, err, otherNumber)
	}
}

func testUnknownNumber(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	_, err := env.Carrier.Number(ctxOf(t), notOurs)
	if !errors.Is(err, carrier.ErrNotFound) || !carrier.Permanent(err) {
		t.Errorf("a number not on the account: %v, want not found", err)
	}
}

func testAttach(t *testing.T, newCarrier Factory) {
	env := newCarrier(t, account(), FaultNone)
	ctx := ctxOf(t)
	n, err := env.Carrier.Number(ctx, ourNumber)
	if err != nil {
		t.Fatalf("Number: %v", err)
	}
	voiceURL, statusURL := "https://voice.example.com/hook/voice", "https://voice.example.com/hook/status"
	if env.OneWebhook {
		statusURL = voiceURL
	}
	after, err := env.Carrier.Attach(ctx, n, voiceURL, statusURL)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	check := func(how string, got carrier.Number) {
		t.Helper()
		if got.VoiceURL != voiceURL || got.StatusCallback != statusURL || got.Override != "" || got.PhoneNumber != ourNumber {
			t.Errorf("%s: %+v, want voice %s, status %s, no override", how, got, voiceURL, statusURL)
		}
	}
	check("Attach returned", after)
	again, err := env.Carrier.Number(ctx, ourNumber)
	if err != nil {
		t.Fatalf("Number after Attach: %v", err)
	}
	check("looked up again", again)
	if other, err := env.Carrier.Number(ctx, otherNumber); err != nil || other.VoiceURL == voiceURL {
		t.Errorf("attaching one number changed another: %+v, %v", other, err)
	}
}

// failing checks that each request the contract makes fails with class, and whether the
// class is one to retry.
func failing(t *testing.T, env Env, class error) {
	t.Helper()
	ctx := ctxOf(t)
	for name, err := range map[string]error{
		"Account": second(env.Carrier.Account(ctx)),
		"Numbers": second(env.Carrier.Numbers(ctx)),
		"Number":  second(env.Carrier.Number(ctx, ourNumber)),
		"Dial":    second(env.Carrier.Dial(ctx, carrier.Dial{To: person, From: ourNumber, PublicURL: env.PublicURL})),
	} {
		if !errors.Is(err, class) {
			t.Errorf("%s: %v, want %v", name, err, class)
		}
		if retry := class == carrier.ErrUnreachable; carrier.Permanent(err) == retry {
			t.Errorf("%s: %v counts as permanent %v", name, err, !retry)
		}
	}
}

func testAuth(t *testing.T, newCarrier Factory) {
	failing(t, newCarrier(t, account(), FaultAuth), carrier.ErrAuth)
}

func testServerError(t *testing.T, newCarrier Factory) {
	failing(t, newCarrier(t, account(), FaultServer), carrier.ErrUnreachable)
}

func testUnreachable(t *testing.T, newCarrier Factory) {
	failing(t, newCarrier(t, account(), FaultUnreachable), carrier.ErrUnreachable)
}
