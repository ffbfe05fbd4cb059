package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/postgres"
	"github.com/handset-voice/handset/internal/store/postgres/pgtest"
	"github.com/handset-voice/handset/internal/testpeer"
)

// multiNodeJobs is how many outbound calls the multi-node test queues.
const multiNodeJobs = 500

// TestThreeNodesRunEveryJobOnce: three `handset serve` processes on one PostgreSQL, behind
// a load balancer as in production, work through a dialer list of 500 numbers against the
// carrier's fake (its webhooks and streams reach the nodes through the balancer, Handset's
// public URL); one node is killed (SIGKILL) mid-run. Every job completes once, every number
// is called exactly once (jobs the dead node held are resumed from their checkpoints, not
// dialled again), and the survivors stop cleanly.
func TestThreeNodesRunEveryJobOnce(t *testing.T) { forEachCarrier(t, testThreeNodesRunEveryJobOnce) }

func testThreeNodesRunEveryJobOnce(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "the multi-node test runs 500 calls through three processes")
	dbURL := multiNodeDatabase(t)
	bin := buildHandset(t)

	v := startVendor(t, kit, simkit.VendorOptions{
		Numbers: []string{ourNumber},
		Answer:  func(string) simkit.Callee { return simkit.Callee{Hold: time.Second} },
	})
	dg := fakedeepgram.New(fakedeepgram.Options{Key: "dg-key"})
	el := fakeelevenlabs.New(fakeelevenlabs.Options{Key: "el-key", MsPerChar: 20})
	dgSrv, elSrv := httptest.NewServer(dg), httptest.NewServer(el)
	lb := newBalancer()
	loseAnswers(kit, lb, 7)
	lbSrv := httptest.NewServer(lb)
	t.Cleanup(func() {
		dg.Close()
		dgSrv.Close()
		elSrv.Close()
		lbSrv.Close()
	})
	// The nodes reach the vendor's API through a tap, which shows what each of them asked.
	carrierSettings, vendorAPI := tapAPI(t, vendorSettings(kit, v, lbSrv.URL))

	common := append([]string{
		"HANDSET_DATABASE_URL=" + dbURL, "HANDSET_PUBLIC_URL=" + lbSrv.URL,
		"HANDSET_AGENT=echo", "HANDSET_VAD=energy",
		"HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=dg-key", "HANDSET_DEEPGRAM_URL=" + dgSrv.URL,
		"HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-key", "HANDSET_ELEVENLABS_URL=" + elSrv.URL,
		"HANDSET_FIRST_MESSAGE=Hello.", "HANDSET_JOB_LEASE=3s",
		"HANDSET_OUTBOUND_CONCURRENCY=20", "HANDSET_OUTBOUND_RATE=0", "HANDSET_DRAIN_TIMEOUT=20s",
	}, carrierSettings...)
	dir := t.TempDir()
	var nodes []*nodeProc
	for i := 1; i <= 3; i++ {
		n := startNode(t, bin, dir, fmt.Sprintf("node-%d", i), common)
		lb.add(n.name, n.url)
		nodes = append(nodes, n)
	}

	// The dialer list, queued with `handset call --list` against the shared database.
	var list strings.Builder
	for i := range multiNodeJobs {
		fmt.Fprintf(&list, "+1555020%04d\n", i)
	}
	listFile := filepath.Join(dir, "spring.txt")
	if err := os.WriteFile(listFile, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := exec.Command(bin, "call", "--list", listFile)
	queue.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "HANDSET_DATA_DIR=" + filepath.Join(dir, "cli")}, common...)
	queue.Dir = dir
	out, err := queue.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("queued %d calls", multiNodeJobs)) {
		t.Fatalf("handset call --list: %v\n%s", err, out)
	}

	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	batch := func() []store.Job {
		js, err := st.Jobs(context.Background(), store.ListJobs{Batch: "spring", Limit: 2 * multiNodeJobs})
		if err != nil {
			t.Fatal(err)
		}
		return js
	}

	// Kill node-2 while it holds jobs, once a fifth of the list is done.
	victim := nodes[1]
	waitUntil(t, 3*time.Minute, "node-2 holding jobs with 100 done", func() bool {
		done, held := 0, 0
		for _, j := range batch() {
			switch {
			case j.State == store.JobCompleted || j.State == store.JobFailed:
				done++
			case j.State == store.JobRunning && j.LeaseOwner == victim.name:
				held++
			}
		}
		return done >= 100 && held >= 3
	}, nodes)
	lb.remove(victim.name) // the balancer's health check takes it out first
	time.Sleep(300 * time.Millisecond)
	killedAt := time.Now()
	victim.kill(t)
	// What the dead node still held (it may have finished a few in the last moments).
	var heldAtKill []int64
	for _, j := range batch() {
		if j.State == store.JobRunning && j.LeaseOwner == victim.name {
			heldAtKill = append(heldAtKill, j.ID)
		}
	}
	if len(heldAtKill) == 0 {
		t.Fatal("node-2 held no job when it was killed: the test did not exercise a reclaim")
	}

	waitUntil(t, 5*time.Minute, "every job finished", func() bool {
		for _, j := range batch() {
			if j.State != store.JobCompleted && j.State != store.JobFailed {
				return false
			}
		}
		return true
	}, nodes)

	// Every job completed, once, each with its own call.
	jobsNow := batch()
	if len(jobsNow) != multiNodeJobs {
		t.Fatalf("%d jobs in the batch, want %d", len(jobsNow), multiNodeJobs)
	}
	sids := map[string]int64{}
	reclaimed, lateWrites := 0, 0
	held := map[int64]bool{}
	for _, id := range heldAtKill {
		held[id] = true
	}
	for _, j := range jobsNow {
		if j.State != store.JobCompleted {
			t.Errorf("job %d (%s) %s after %d attempts: %s", j.ID, payloadTo(j), j.State, j.Attempts, j.Error)
			continue
		}
		var r jobs.CallResult
		if err := json.Unmarshal(j.Result, &r); err != nil || r.CallSID == "" {
			t.Errorf("job %d result %s", j.ID, j.Result)
			continue
		}
		if other, dup := sids[r.CallSID]; dup {
			t.Errorf("jobs %d and %d report the same call %s", other, j.ID, r.CallSID)
		}
		sids[r.CallSID] = j.ID
		if held[j.ID] {
			if j.LeaseOwner == victim.name && j.UpdatedAt.Before(killedAt) {
				// node-2 finished it while alive: its write reached the database after the
				// snapshot of what it held was read.
				lateWrites++
				continue
			}
			reclaimed++
			if j.LeaseOwner == victim.name {
				t.Errorf("job %d held by the killed node was finished by it", j.ID)
			}
		}
	}
	if reclaimed+lateWrites != len(heldAtKill) || reclaimed == 0 {
		t.Errorf("%d of the %d jobs node-2 held were finished by the survivors (%d by node-2 before it died)", reclaimed, len(heldAtKill), lateWrites)
	}
	perNumber := map[string]int{}
	placed := v.Calls()
	for _, c := range placed {
		perNumber[c.To]++
		if _, ok := sids[c.Ref]; !ok {
			t.Errorf("%s call %s to %s belongs to no job's result", kit.Name(), c.Ref, c.To)
		}
	}
	if len(perNumber) != multiNodeJobs || len(placed) != multiNodeJobs {
		t.Errorf("%s saw %d calls to %d numbers, want %d each", kit.Name(), len(placed), len(perNumber), multiNodeJobs)
	}
	commandsOnce(t, kit, vendorAPI, placed)
	if lost := lb.lost.Load(); lost > 0 {
		t.Logf("the balancer lost the answers to %d webhooks, which the vendor sent again", lost)
	}
	for number, n := range perNumber {
		if n != 1 {
			t.Errorf("%s was called %d times", number, n)
		}
	}
	// Calls are visible from every node's store view: the survivors saw all 500.
	calls, err := st.Calls(context.Background(), store.ListCalls{Limit: 2 * multiNodeJobs})
	if err != nil || len(calls) != multiNodeJobs {
		t.Errorf("%d calls recorded (%v), want %d", len(calls), err, multiNodeJobs)
	}
	media := map[string]int{}
	for _, c := range calls {
		media[c.Node]++
		if c.EndedAt.IsZero() {
			t.Errorf("call %s never ended in the store", c.ID)
		}
	}
	t.Logf("held by node-2 at the kill: %d jobs (%d of them finished by it before it died); media per node: %v", len(heldAtKill), lateWrites, media)
	for _, n := range []*nodeProc{nodes[0], nodes[2]} {
		if code := n.stop(t); code != 0 {
			t.Errorf("%s exited with %d on SIGTERM:\n%s", n.name, code, n.tail())
		}
	}
}

// multiNodeDatabase creates an empty database on the test PostgreSQL, dropped at the end.
func multiNodeDatabase(t *testing.T) string { return pgtest.NewDatabase(t, "handset_multinode") }

// buildHandset builds the binary the nodes run.
func buildHandset(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "handset")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/handset")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// nodeProc is one `handset serve` process.
type nodeProc struct {
	name, url, log string
	cmd            *exec.Cmd
	exited         chan struct{}
	code           int
}

func startNode(t *testing.T, bin, dir, name string, common []string) *nodeProc {
	t.Helper()
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	n := &nodeProc{name: name, url: "http://" + addr, log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, "serve")
	n.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"HANDSET_LISTEN=" + addr, "HANDSET_NODE_ID=" + name, "HANDSET_DATA_DIR=" + filepath.Join(dir, name)}, common...)
	n.cmd.Dir = dir
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = n.cmd.Wait()
		n.code = n.cmd.ProcessState.ExitCode()
		logf.Close()
		close(n.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-n.exited:
		default:
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	})
	waitUntil(t, 30*time.Second, name+" ready", func() bool {
		resp, err := http.Get(n.url + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, []*nodeProc{n})
	return n
}

func (n *nodeProc) kill(t *testing.T) {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

// stop sends SIGTERM and returns the exit code.
func (n *nodeProc) stop(t *testing.T) int {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(60 * time.Second):
		t.Errorf("%s did not stop within 60 s of SIGTERM", n.name)
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
	return n.code
}

// tail is the end of the node's log.
func (n *nodeProc) tail() string {
	b, _ := os.ReadFile(n.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitUntil polls cond until it holds; on timeout it fails with the nodes' logs.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool, nodes []*nodeProc) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		for _, n := range nodes {
			select {
			case <-n.exited:
				if n.code != -1 { // -1: killed by the test
					t.Fatalf("%s exited with %d while waiting for %s:\n%s", n.name, n.code, what, n.tail())
				}
			default:
			}
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, n := range nodes {
				fmt.Fprintf(&logs, "--- %s\n%s\n", n.name, n.tail())
			}
			t.Fatalf("timed out waiting for %s\n%s", what, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// balancer is a round-robin reverse proxy over the live nodes, WebSockets included, as a
// load balancer in front of a Handset cluster would be.
type balancer struct {
	mu    sync.Mutex
	names []string
	procs map[string]*httputil.ReverseProxy
	next  atomic.Uint64
	// lose, when set before the balancer serves, picks requests whose answer it loses: the
	// node handles them, the client gets 502.
	lose func(*http.Request) bool
	lost atomic.Int64
}

func newBalancer() *balancer { return &balancer{procs: map[string]*httputil.ReverseProxy{}} }

func (b *balancer) add(name, rawURL string) {
	u, _ := url.Parse(rawURL)
	// Keep the public Host (Twilio signs the URL it was given) and the client's scheme
	// (X-Forwarded-Host and -Proto pass unchanged); add the client to X-Forwarded-For.
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
		r.Out.Header["X-Forwarded-For"] = r.In.Header["X-Forwarded-For"]
		r.SetXForwarded()
		for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
			if v, ok := r.In.Header[h]; ok {
				r.Out.Header[h] = v
			} else {
				r.Out.Header.Del(h)
			}
		}
	}}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.names = append(b.names, name)
	b.procs[name] = p
}

func (b *balancer) remove(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, n := range b.names {
		if n == name {
			b.names = append(b.names[:i], b.names[i+1:]...)
		}
	}
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	if len(b.names) == 0 {
		b.mu.Unlock()
		http.Error(w, "no node", http.StatusBadGateway)
		return
	}
	p := b.procs[b.names[int(b.next.Add(1))%len(b.names)]]
	b.mu.Unlock()
	if b.lose != nil && b.lose(r) {
		p.ServeHTTP(httptest.NewRecorder(), r)
		b.lost.Add(1)
		http.Error(w, "the node's answer was lost", http.StatusBadGateway)
		return
	}
	p.ServeHTTP(w, r)
}
