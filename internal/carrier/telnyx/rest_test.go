package telnyx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// recorded is one request a canned server saw.
type recorded struct {
	method, path, query, auth, body string
}

// canned serves status and body to every request and records them.
func canned(t *testing.T, status int, body string) (*REST, *[]recorded) {
	t.Helper()
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(b)})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	r, err := NewREST(RESTOptions{BaseURL: srv.URL + "/v2/", APIKey: "KEYsecret", ConnectionID: "1234"})
	if err != nil {
		t.Fatal(err)
	}
	return r, &seen
}

func TestCommandSendsJSONWithTheBearerKey(t *testing.T) {
	r, seen := canned(t, http.StatusOK, `{"data":{"result":"ok"}}`)
	err := r.Command(context.Background(), "v3:abc-DEF_1", "hangup", HangupRequest{CommandID: "hangup:v3:abc-DEF_1"})
	if err != nil {
		t.Fatal(err)
	}
	want := recorded{"POST", "/v2/calls/v3:abc-DEF_1/actions/hangup", "", "Bearer KEYsecret", `{"command_id":"hangup:v3:abc-DEF_1"}`}
	if len(*seen) != 1 || (*seen)[0] != want {
		t.Errorf("sent %+v, want %+v", *seen, want)
	}
}

func TestCommandErrorsAreClassified(t *testing.T) {
	const ended = `{"errors":[{"code":"90018","title":"Call has already ended","detail":"This call is no longer active and can't receive commands."}]}`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		class  error
		ended  bool
	}{
		{"auth", 401, `{"errors":[{"code":"10009","title":"Authentication failed"}]}`, carrier.ErrAuth, false},
		{"forbidden", 403, `{}`, carrier.ErrAuth, false},
		{"unknown call", 404, `{"errors":[{"code":"10005","title":"Resource not found"}]}`, carrier.ErrNotFound, false},
		{"ended", 422, ended, carrier.ErrRejected, true},
		{"numeric code", 422, `{"errors":[{"code":90018,"title":"Call has already ended"}]}`, carrier.ErrRejected, true},
		{"invalid", 422, `{"errors":[{"code":"10015","title":"Invalid value"}]}`, carrier.ErrRejected, false},
		{"bad request", 400, `not json`, carrier.ErrRejected, false},
		{"rate limit", 429, `{}`, carrier.ErrUnreachable, false},
		{"server", 503, `<html>down</html>`, carrier.ErrUnreachable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := canned(t, tc.status, tc.body)
			err := r.Command(context.Background(), "v3:x", "transfer", TransferRequest{To: "+15550103000"})
			if !errors.Is(err, tc.class) || errors.Is(err, ErrCallEnded) != tc.ended {
				t.Errorf("%d %s: %v; want class %v, ended %v", tc.status, tc.body, err, tc.class, tc.ended)
			}
			if strings.Contains(err.Error(), "KEYsecret") {
				t.Errorf("the error shows the API key: %v", err)
			}
		})
	}
}

func TestHostileIDsNeverReachTheAPI(t *testing.T) {
	r, seen := canned(t, http.StatusOK, `{}`)
	ctx := context.Background()
	for _, id := range []string{"", "../balance", "a b", "x\n", strings.Repeat("a", 300), "v3:é"} {
		if err := r.Command(ctx, id, "hangup", nil); !errors.Is(err, carrier.ErrInvalid) {
			t.Errorf("Command(%q): %v, want invalid", id, err)
		}
		if _, err := r.FetchCall(ctx, id); !errors.Is(err, carrier.ErrInvalid) {
			t.Errorf("FetchCall(%q): %v, want invalid", id, err)
		}
	}
	for _, action := range []string{"", "hangup/../x", "a?b"} {
		if err := r.Command(ctx, "v3:x", action, nil); !errors.Is(err, carrier.ErrInvalid) {
			t.Errorf("Command action %q: %v, want invalid", action, err)
		}
	}
	if len(*seen) != 0 {
		t.Errorf("hostile ids reached the API: %+v", *seen)
	}
}

func TestNewRESTRefusesBadSettings(t *testing.T) {
	for name, o := range map[string]RESTOptions{
		"no key":           {},
		"key with space":   {APIKey: "KEY abc"},
		"key with break":   {APIKey: "KEYabc\n"},
		"not http":         {APIKey: "KEY", BaseURL: "ftp://example.com/v2"},
		"credentials":      {APIKey: "KEY", BaseURL: "https://u:p@example.com/v2"},
		"query":            {APIKey: "KEY", BaseURL: "https://example.com/v2?x=1"},
		"no host":          {APIKey: "KEY", BaseURL: "https:///v2"},
		"not a URL at all": {APIKey: "KEY", BaseURL: "://"},
	} {
		if _, err := NewREST(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r, err := NewREST(RESTOptions{APIKey: "KEYsecret"})
	if err != nil || r.BaseURL() != DefaultRESTURL || strings.Contains(r.String()+r.GoString(), "KEYsecret") {
		t.Errorf("defaults: %v, %v", r, err)
	}
}

func TestRequestTimeoutIsUnreachable(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	r, err := NewREST(RESTOptions{BaseURL: srv.URL, APIKey: "KEY", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Balance(context.Background()); !errors.Is(err, carrier.ErrUnreachable) || carrier.Permanent(err) {
		t.Errorf("a request that timed out: %v, want unreachable", err)
	}
}

func TestAnswerThatIsNotJSONIsUnreachable(t *testing.T) {
	r, _ := canned(t, http.StatusOK, `<html>`)
	if _, err := r.Balance(context.Background()); !errors.Is(err, carrier.ErrUnreachable) {
		t.Errorf("a 200 that is not JSON: %v", err)
	}
}
