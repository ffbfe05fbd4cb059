package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/postgres"
	"github.com/handset-voice/handset/internal/store/sqlite"
	"github.com/handset-voice/handset/internal/testpeer"
)

const nodeLostToken = "node-lost-api-token-0123456789abcdef"

// speechFakes starts fake Deepgram and ElevenLabs and returns the settings every node of
// a test shares: the echo agent, the fakes, an API token (the carrier's come from its kit).
func speechFakes(t *testing.T) []string {
	t.Helper()
	dg := fakedeepgram.New(fakedeepgram.Options{Key: "dg-key"})
	el := fakeelevenlabs.New(fakeelevenlabs.Options{Key: "el-key", MsPerChar: 20})
	dgSrv, elSrv := httptest.NewServer(dg), httptest.NewServer(el)
	t.Cleanup(func() { dg.Close(); dgSrv.Close(); elSrv.Close() })
	return []string{
		"HANDSET_AGENT=echo", "HANDSET_VAD=energy",
		"HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=dg-key", "HANDSET_DEEPGRAM_URL=" + dgSrv.URL,
		"HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-key", "HANDSET_ELEVENLABS_URL=" + elSrv.URL,
		"HANDSET_FIRST_MESSAGE=Hello.", "HANDSET_API_TOKEN=" + nodeLostToken,
		"HANDSET_TRANSFER_ALLOW=+1555*", "HANDSET_DRAIN_TIMEOUT=5s",
	}
}

// callOn places an inbound call on node through the vendor and waits until its greeting
// has played, so the call is recorded, running, on that node.
func callOn(t *testing.T, v simkit.Vendor, n *nodeProc) phone.Phone {
	t.Helper()
	ctx := context.Background()
	c, err := v.Call(ctx, n.url, simkit.CallOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", n.name, err, n.tail())
	}
	t.Cleanup(func() { _ = c.Hangup() })
	waitMark(ctx, t, c, "t0-end")
	return c
}

// onlyCall returns the one call in st.
func onlyCall(t *testing.T, st store.Store) store.Call {
	t.Helper()
	calls, err := st.Calls(context.Background(), store.ListCalls{})
	if err != nil || len(calls) != 1 {
		t.Fatalf("want one call in the store, got %d (%v)", len(calls), err)
	}
	return calls[0]
}

// api sends an authorised request to a node's API and returns the status and body.
func api(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+nodeLostToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestKilledNodesCallIsEndedByAnother: two `handset serve` processes on one PostgreSQL; a
// call runs on node-1, which is killed with SIGKILL (it ends nothing). node-2 sees node-1
// stop heartbeating and ends the call as node_lost, the API shows it ended, and a transfer
// of it is refused at once with the reason instead of waiting for a node that is gone.
func TestKilledNodesCallIsEndedByAnother(t *testing.T) {
	forEachCarrier(t, testKilledNodesCallIsEndedByAnother)
}

func testKilledNodesCallIsEndedByAnother(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "runs two serve processes")
	dbURL := multiNodeDatabase(t)
	bin := buildHandset(t)
	v := startVendor(t, kit, simkit.VendorOptions{})
	common := append(append(speechFakes(t), vendorSettings(kit, v, "")...), "HANDSET_DATABASE_URL="+dbURL, "HANDSET_JOB_LEASE=3s")
	dir := t.TempDir()
	n1 := startNode(t, bin, dir, "node-1", common)
	n2 := startNode(t, bin, dir, "node-2", common)
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	callOn(t, v, n1)
	c := onlyCall(t, st)
	if c.Node != "node-1" || !c.EndedAt.IsZero() {
		t.Fatalf("the call is %+v, want running on node-1", c)
	}
	n1.kill(t)
	waitUntil(t, time.Minute, "node-2 ending node-1's call", func() bool {
		got, err := st.Call(context.Background(), c.ID)
		return err == nil && !got.EndedAt.IsZero()
	}, []*nodeProc{n2})
	if got, _ := st.Call(context.Background(), c.ID); got.Outcome != store.OutcomeNodeLost {
		t.Errorf("the dead node's call ended %q, want %s", got.Outcome, store.OutcomeNodeLost)
	}

	code, body := api(t, n2.url, http.MethodGet, "/api/calls/"+string(c.ID), "")
	var view struct {
		Live    bool   `json:"live"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(body), &view); err != nil || code != http.StatusOK || view.Live || view.Outcome != store.OutcomeNodeLost {
		t.Errorf("GET /api/calls/%s = %d %s, want it ended node_lost", c.ID, code, body)
	}
	start := time.Now()
	code, body = api(t, n2.url, http.MethodPost, "/api/calls/"+string(c.ID)+"/transfer", `{"to": "+15550101010"}`)
	if code != http.StatusConflict || !strings.Contains(body, "lost with its node node-1") {
		t.Errorf("transfer of the lost call = %d %s, want 409 saying it was lost with node-1", code, body)
	}
	t.Logf("the transfer was refused in %v", time.Since(start))
	if code := n2.stop(t); code != 0 {
		t.Errorf("node-2 exited with %d:\n%s", code, n2.tail())
	}
}

// TestRestartedNodeEndsTheCallsItLeft: one node on SQLite holds a call when it is killed
// with SIGKILL. Started again under the same name, before any lost-node sweep could judge
// it (the lease is an hour), it ends that call as node_lost at start-up.
func TestRestartedNodeEndsTheCallsItLeft(t *testing.T) {
	forEachCarrier(t, testRestartedNodeEndsTheCallsItLeft)
}

func testRestartedNodeEndsTheCallsItLeft(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "runs serve processes")
	bin := buildHandset(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "solo")
	v := startVendor(t, kit, simkit.VendorOptions{})
	common := append(append(speechFakes(t), vendorSettings(kit, v, "")...), "HANDSET_JOB_LEASE=1h")
	n := startNode(t, bin, dir, "solo", common)
	callOn(t, v, n)
	n.kill(t)

	again := startNode(t, bin, dir, "solo", common) // the same name and data folder
	code, body := api(t, again.url, http.MethodGet, "/api/calls", "")
	var list struct {
		Calls []struct {
			Live    bool   `json:"live"`
			Outcome string `json:"outcome"`
			Node    string `json:"node"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != http.StatusOK || len(list.Calls) != 1 {
		t.Fatalf("GET /api/calls = %d %s", code, body)
	}
	if got := list.Calls[0]; got.Live || got.Outcome != store.OutcomeNodeLost || got.Node != "solo" {
		t.Errorf("after the restart the call is %+v, want ended node_lost", got)
	}
	if code := again.stop(t); code != 0 {
		t.Errorf("the restarted node exited with %d:\n%s", code, again.tail())
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if c := onlyCall(t, st); c.Outcome != store.OutcomeNodeLost {
		t.Errorf("the store has the call ended %q", c.Outcome)
	}
}

// TestTransferToALostNodesCallFailsFast: a transfer aimed at a call recorded running on a
// node that stopped heartbeating a minute ago is answered at once, before any sweep: the
// call is ended node_lost and the transfer refused naming the node, instead of the request
// waiting 10 s for a node that will never take it.
func TestTransferToALostNodesCallFailsFast(t *testing.T) {
	forEachCarrier(t, testTransferToALostNodesCallFailsFast)
}

func testTransferToALostNodesCallFailsFast(t *testing.T, kit simkit.Kit) {
	r := startServeWith(t, kit, nil, "HANDSET_API_TOKEN="+nodeLostToken, "HANDSET_TRANSFER_ALLOW=+1555*")
	st, err := sqlite.Open(context.Background(), filepath.Join(r.dataDir, "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Now()
	if err := st.NodeHeartbeat(ctx, "gone", now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.StartCall(ctx, store.Call{ID: "c_lost", Carrier: kit.Name(), Direction: "inbound", Node: "gone",
		StartedAt: now.Add(-2 * time.Minute), Journal: "/elsewhere/calls/c_lost/events.jsonl"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, body := api(t, r.baseURL(), http.MethodPost, "/api/calls/c_lost/transfer", `{"to": "+15550101010"}`)
	took := time.Since(start)
	if code != http.StatusConflict || !strings.Contains(body, "lost with its node gone") {
		t.Errorf("transfer = %d %s, want 409 saying the call was lost with node gone", code, body)
	}
	if c, err := st.Call(ctx, "c_lost"); err != nil || c.Outcome != store.OutcomeNodeLost {
		t.Errorf("the lost call is %+v (%v), want ended node_lost", c, err)
	}
	t.Logf("answered in %v", took)
}
