package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

const testAPIToken = "dashboard-test-api-token-0123456789"

// serveWithStore serves a gateway on fakesConfig; it returns its base URL and the ids of
// the calls it admits.
func serveWithStore(t *testing.T, extra ...string) (string, <-chan voice.CallID) {
	t.Helper()
	cfg := fakesConfig(t, append([]string{"HANDSET_API_TOKEN=" + testAPIToken}, extra...)...)
	ctx, cancel := context.WithCancel(context.Background())
	prov, err := buildProviders(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(ctx, cfg, prov, st, quiet, serverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan voice.CallID, 4)
	srv.onCall = func(c *call.Call) { calls <- c.ID() }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		prov.release()
		_ = st.Close()
	})
	return "http://" + ln.Addr().String(), calls
}

func getWithToken(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestDashboardFollowsACall: the dashboard is served,
// a call in progress is on its live page and stream, and its page shows what was said.
func TestDashboardFollowsACall(t *testing.T) {
	base, calls := serveWithStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	phone, err := twiliocaller.Dial(ctx, twiliocaller.Options{BaseURL: base, AuthToken: testTwilioToken, InsecureStreamURL: true})
	if err != nil {
		t.Fatal(err)
	}
	var id voice.CallID
	select {
	case id = <-calls:
	case <-ctx.Done():
		t.Fatal("the call was not admitted")
	}
	// Once the greeting has played the call is on its live page.
	err = phone.WaitFor(ctx, func(s twiliocaller.Snapshot) bool {
		for _, m := range s.Marks() {
			if m.Name == "t0-end" && m.Echoed {
				return true
			}
		}
		return s.Ended
	})
	if err != nil || phone.Snapshot().Ended {
		t.Fatalf("the greeting did not play (err %v)", err)
	}
	if _, body := getWithToken(t, base+"/dashboard/live"); !strings.Contains(body, `data-call="`+string(id)+`"`) {
		t.Fatalf("the live page does not list call %s", id)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/dashboard/calls/"+string(id)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the call's stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	_ = phone.Hangup()
	<-phone.Done()
	// The stream replays the call from its start and ends with it.
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			types = append(types, ev)
		}
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "hello journal") || !strings.HasSuffix(got, "journal end") {
		t.Errorf("the stream's events: %s", got)
	}
	_, body := getWithToken(t, base+"/dashboard/calls/"+string(id))
	if !strings.Contains(body, "Hello, this is Handset.") {
		t.Errorf("the call's page lacks its greeting:\n%s", body)
	}
}

// TestDashboardTurnsOff: HANDSET_DASHBOARD=false serves no dashboard; it is on by default.
func TestDashboardTurnsOff(t *testing.T) {
	off, _ := serveWithStore(t, "HANDSET_DASHBOARD=false")
	if resp, _ := getWithToken(t, off+"/dashboard"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("HANDSET_DASHBOARD=false: /dashboard answered %s", resp.Status)
	}
	on, _ := serveWithStore(t)
	if resp, _ := getWithToken(t, on+"/dashboard"); resp.StatusCode != http.StatusOK {
		t.Errorf("by default: /dashboard answered %s", resp.Status)
	}
}
