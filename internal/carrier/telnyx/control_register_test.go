package telnyx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

func TestOpenAccountSaysWhatIsMissing(t *testing.T) {
	for name, tc := range map[string]struct {
		s    registrytest.Settings
		want string
	}{
		"nothing":       {registrytest.Settings{}, "Telnyx is not configured"},
		"no key":        {registrytest.Settings{"TELNYX_CONNECTION_ID": "1"}, "TELNYX_API_KEY is not set"},
		"no connection": {registrytest.Settings{"TELNYX_API_KEY": "KEY"}, "TELNYX_CONNECTION_ID is not set"},
		"bad URL":       {registrytest.Settings{"TELNYX_API_KEY": "KEY", "TELNYX_CONNECTION_ID": "1", "HANDSET_TELNYX_API_URL": "ftp://x"}, "HANDSET_TELNYX_API_URL"},
	} {
		if _, err := numbers.Open(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, tc.want)
		}
	}
	s := registrytest.Settings{"TELNYX_API_KEY": "KEY", "TELNYX_CONNECTION_ID": " 42 "}
	if c, err := numbers.Open(s); err != nil || c.Name() != "telnyx" || numbers.AccountID(s) != "42" {
		t.Errorf("Open: %v, %v", c, err)
	}
}

func TestExplainNamesTheSetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"code":"10009","title":"Authentication failed"}]}`))
	}))
	defer srv.Close()
	s := registrytest.Settings{"TELNYX_API_KEY": "KEYbad", "TELNYX_CONNECTION_ID": "42", "HANDSET_TELNYX_API_URL": srv.URL}
	c, err := numbers.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Account(context.Background())
	if msg := numbers.Explain(s, err).Error(); !strings.Contains(msg, "TELNYX_API_KEY") || strings.Contains(msg, "KEYbad") {
		t.Errorf("explained: %s", msg)
	}
	notFound := carrier.Classify(carrier.ErrNotFound, errors.New("get application: no such application"))
	if msg := numbers.Explain(s, notFound).Error(); !strings.Contains(msg, "TELNYX_CONNECTION_ID") {
		t.Errorf("explained: %s", msg)
	}
}

// TestTheWiringsControlReadsTheLedger: the control built from the catalogue reads the
// memory the mounted webhooks write.
func TestTheWiringsControlReadsTheLedger(t *testing.T) {
	memory := carriertest.NewMemory()
	asked := ""
	c, err := newControl(registry.Build{
		Settings: registrytest.Settings{"TELNYX_API_KEY": "KEY", "TELNYX_CONNECTION_ID": "42"},
		Memory:   func(name string) carrier.Memory { asked = name; return memory },
	})
	if err != nil || asked != Name {
		t.Fatalf("newControl: %v, memory of %q", err, asked)
	}
	ctx := context.Background()
	if err := memory.Progressed(ctx, carrier.Progress{Ref: "v3:a", Status: carrier.StatusBusy}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Call(ctx, "v3:a"); err != nil || got.Status != carrier.StatusBusy {
		t.Errorf("Call: %+v, %v; want busy from the ledger", got, err)
	}
}
