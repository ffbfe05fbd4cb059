package telnyx_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
)

// TestNumbersFollowEveryPage: more numbers than a page holds are all listed.
func TestNumbersFollowEveryPage(t *testing.T) {
	var a carriertest.Account
	for i := range 300 {
		a.Numbers = append(a.Numbers, fmt.Sprintf("+1415555%04d", i))
	}
	r := newRig(t, a, carriertest.FaultNone, telnyxsim.Options{})
	ns, err := r.control.Numbers(ctxOf(t))
	if err != nil || len(ns) != 300 || ns[299].PhoneNumber != "+14155550299" {
		t.Fatalf("Numbers: %d, %v", len(ns), err)
	}
	pages := 0
	for _, q := range r.fake.Requests() {
		if q.Path == "/v2/phone_numbers" {
			pages++
			if q.Query.Get("page[size]") != "250" {
				t.Errorf("page size %q", q.Query.Get("page[size]"))
			}
		}
	}
	if pages != 2 {
		t.Errorf("%d pages read, want 2", pages)
	}
}

// TestAttachMovesTheApplication: Attach puts the number on our application and points the
// application (webhook API version 2) at the URL; AttachNotice names the other numbers on
// the application, which now reach Handset too; a number on another connection shows it
// as the override.
func TestAttachMovesTheApplication(t *testing.T) {
	const app = "1293384261075731499"
	r := newRig(t, carriertest.Account{}, carriertest.FaultNone, telnyxsim.Options{ConnectionID: app, WebhookAPIVersion: "1",
		Numbers: []telnyxsim.Number{{PhoneNumber: ours}, {PhoneNumber: "+14155550111", ConnectionID: app},
			{PhoneNumber: "+14155550122", ConnectionID: "999", ConnectionName: "the old PBX"}}})
	ctx := ctxOf(t)
	old, err := r.control.Number(ctx, "+14155550122")
	if err != nil || old.Override != "999 (the old PBX)" || old.VoiceURL != "" {
		t.Errorf("number on another connection: %+v, %v", old, err)
	}
	n, err := r.control.Number(ctx, ours)
	if err != nil {
		t.Fatal(err)
	}
	hook := "https://voice.example.com/telnyx/webhook"
	after, err := r.control.Attach(ctx, n, hook, hook)
	if err != nil || after.VoiceURL != hook || after.StatusCallback != hook || after.Override != "" || after.Ref != n.Ref {
		t.Fatalf("Attach: %+v, %v", after, err)
	}
	var patchedApp map[string]string
	for _, q := range r.fake.Requests() {
		if q.Method == http.MethodPatch && strings.HasPrefix(q.Path, "/v2/call_control_applications/") {
			_ = json.Unmarshal(q.Body, &patchedApp)
		}
	}
	if patchedApp["webhook_event_url"] != hook || patchedApp["webhook_api_version"] != "2" {
		t.Errorf("application patched with %v", patchedApp)
	}
	notice, err := r.control.AttachNotice(ctx, ours)
	if err != nil || !strings.Contains(notice, "+14155550111") || strings.Contains(notice, ours) || strings.Contains(notice, "+14155550122") {
		t.Errorf("AttachNotice: %q, %v; want it to name +14155550111 only", notice, err)
	}
	other, err := r.control.Number(ctx, "+14155550111")
	if err != nil || other.VoiceURL != hook {
		t.Errorf("the application's other number: %+v, %v; want it at %s too", other, err, hook)
	}
}

func TestAttachWithoutConnectionIsInvalid(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{})
	c, err := newControlWithout(r)
	if err != nil {
		t.Fatal(err)
	}
	before := len(r.fake.Requests())
	if _, err := c.Attach(ctxOf(t), carrier.Number{Ref: "1", PhoneNumber: ours}, "https://x.example/telnyx/webhook", ""); !carrier.Permanent(err) {
		t.Errorf("Attach without TELNYX_CONNECTION_ID: %v", err)
	}
	if len(r.fake.Requests()) != before {
		t.Error("it reached the API")
	}
	for _, bad := range []string{"", "ftp://x.example/hook", "/telnyx/webhook", "https://"} {
		if _, err := r.control.Attach(ctxOf(t), carrier.Number{Ref: "1", PhoneNumber: ours}, bad, ""); !errors.Is(err, carrier.ErrInvalid) {
			t.Errorf("Attach to %q: %v, want invalid", bad, err)
		}
	}
	if len(r.fake.Requests()) != before {
		t.Error("a bad URL reached the API")
	}
}
