// Package bench is Handset's load generator: it holds N simulated Twilio calls against a
// running Handset, each streaming speech at real-time pace over a real WebSocket and taking
// turns with the agent, and reads what the gateway says of itself (GET /metrics, its
// journals, its pprof endpoints) into a report: calls held, turns, Handset's own share of
// each turn's latency, outbound frame jitter, dropped frames, CPU, memory and goroutines per
// call, and whether memory and goroutines return to their baseline afterwards.
//
// Starting the Handset under test (a child process, or the same process) and the fake
// vendors it talks to is the command's job (cli/bench.go); this package only drives and
// measures.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Options of a run.
type Options struct {
	BaseURL string // the Handset under load, e.g. http://127.0.0.1:8080
	// Vendor is the fake carrier the callers call through (simkit): it signs their
	// webhooks with the secret the Handset under load checks.
	Vendor     simkit.Vendor
	APIToken   string // its API token, for pprof (a garbage collection before each memory reading, profiles); empty: none
	Calls      int
	Hold       time.Duration // how long every call is held once all are up
	Ramp       float64       // calls started per second
	Utterances [][]byte      // what callers say, 8 kHz mu-law; one turn each
	Pause      time.Duration // silence after a reply before the next utterance
	ReplyWait  time.Duration // a reply that has not played this long after the caller spoke is lost
	// JournalDir, when the Handset's data folder is on this machine, is its calls folder:
	// latencies are then read exactly from the journals instead of a histogram.
	JournalDir string
	// CPUProfile and HeapProfile, when set, receive the Handset's CPU profile over the hold
	// and its heap profile at the end of the hold; AfterProfile its heap profile once the
	// calls have ended (what they left behind). From /debug/pprof; they need APIToken.
	CPUProfile, HeapProfile, AfterProfile io.Writer
	Progress                              io.Writer // a status line every second; nil: none
	Logger                                *slog.Logger
	HTTPClient                            *http.Client
}

func (o *Options) defaults() error {
	if o.BaseURL == "" || o.Vendor == nil || o.Calls <= 0 || o.Hold <= 0 || len(o.Utterances) == 0 {
		return errors.New("bench: BaseURL, Vendor, Calls, Hold and Utterances are required")
	}
	if o.Ramp <= 0 {
		o.Ramp = 20
	}
	if o.Pause <= 0 {
		o.Pause = time.Second
	}
	if o.ReplyWait <= 0 {
		o.ReplyWait = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return nil
}

// driftAfter is when a long hold (two of these or more) takes the reading its end is
// compared with: a minute in, once the calls' buffers and caches have grown to size.
const driftAfter = time.Minute

// settle is how long after the last call is up the hold's first reading waits, so ramp-up
// work is not counted as steady state.
const settle = 2 * time.Second

// Run holds the calls, measures, and returns the report. A report comes back even with
// errors in it; the error is for a run that could not be measured at all.
func Run(ctx context.Context, o Options) (Report, error) {
	if err := o.defaults(); err != nil {
		return Report{}, err
	}
	sc := scraper{url: o.BaseURL + "/metrics", client: o.HTTPClient}
	rep := Report{CallsRequested: o.Calls, HoldSeconds: o.Hold.Seconds(), Machine: machine()}
	o.collect(ctx)
	base, err := sc.sample(ctx)
	if err != nil {
		return rep, err
	}

	// Ramp up.
	t := &tally{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	progress := o.startProgress(ctx, t, sc)
	defer progress.stop()
	every := time.Duration(float64(time.Second) / o.Ramp)
	tick := time.NewTicker(every)
	for i := range o.Calls {
		if i > 0 {
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		c := &caller{n: i, opts: o, tally: t, log: o.Logger, stop: stop, finished: make(chan struct{})}
		wg.Add(1)
		go func() { defer wg.Done(); c.run(ctx) }()
	}
	tick.Stop()
	progress.phase("holding")
	sleep(ctx, settle)

	// Hold.
	start, err := o.steady(ctx, sc)
	if err != nil {
		close(stop)
		wg.Wait()
		return rep, err
	}
	cpuDone := o.cpuProfile(ctx)
	var firstMinute *sample
	if o.Hold >= 2*driftAfter {
		sleep(ctx, driftAfter)
		if s, err := o.steady(ctx, sc); err == nil {
			firstMinute = &s
		}
		sleep(ctx, o.Hold-driftAfter)
	} else {
		sleep(ctx, o.Hold)
	}
	<-cpuDone
	held := t.live.Load()
	end, err := o.steady(ctx, sc)
	o.heapProfile(ctx, o.HeapProfile)

	// Hang up, then see what is left.
	progress.phase("hanging up")
	close(stop)
	wg.Wait()
	after := o.afterCalls(ctx, sc)
	o.heapProfile(ctx, o.AfterProfile)
	if err != nil {
		return rep, err
	}
	rep.fill(o, base, start, end, after, held, t)
	if firstMinute != nil {
		rep.Drift = drift(*firstMinute, end)
	}
	if o.JournalDir != "" {
		rep.Latency = journalLatency(o.JournalDir, base.at)
	}
	if m, ok := o.Vendor.(simkit.ArrivalMeter); ok {
		rep.Arrival = arrival(m)
	}
	return rep, ctx.Err()
}

// arrival reads a vendor's arrival meter as percentiles in milliseconds; nil when it timed
// nothing.
func arrival(m simkit.ArrivalMeter) *Percentiles {
	p := Percentiles{Source: "callers"}
	for _, q := range []struct {
		q   float64
		dst *float64
	}{{0.50, &p.P50}, {0.95, &p.P95}, {0.99, &p.P99}} {
		late, n := m.ArrivalLateness(q.q)
		*q.dst, p.Samples = round3(float64(late)/float64(time.Millisecond)), n
	}
	if p.Samples == 0 {
		return nil
	}
	return &p
}

// steady samples after a collection, so the heap reading is live memory, not garbage.
func (o *Options) steady(ctx context.Context, sc scraper) (sample, error) {
	o.collect(ctx)
	return sc.sample(ctx)
}

// afterCalls waits for the calls to be over on the Handset's side (up to 30 s), then
// samples.
func (o *Options) afterCalls(ctx context.Context, sc scraper) sample {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := sc.sample(ctx)
		if err == nil && s.callsActive == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 200*time.Millisecond)
	}
	sleep(ctx, time.Second) // goroutines of the last calls wind down
	s, _ := o.steady(ctx, sc)
	return s
}

// collect asks the Handset for garbage collections (pprof's heap endpoint runs one): two,
// so what sync.Pool caches hold (buffers kept for reuse, released on the second) does
// not count as memory in use.
func (o *Options) collect(ctx context.Context) {
	if o.APIToken == "" {
		return
	}
	for range 2 {
		_ = o.fetch(ctx, pprofURL(o.BaseURL, "heap?gc=1"), io.Discard, 30*time.Second)
	}
}

// cpuProfile fetches a CPU profile covering the hold into o.CPUProfile.
func (o *Options) cpuProfile(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if o.CPUProfile == nil || o.APIToken == "" {
		close(done)
		return done
	}
	secs := max(1, int(o.Hold.Seconds()))
	go func() {
		defer close(done)
		url := pprofURL(o.BaseURL, fmt.Sprintf("profile?seconds=%d", secs))
		if err := o.fetch(ctx, url, o.CPUProfile, o.Hold+time.Minute); err != nil {
			o.Logger.Warn("bench: cpu profile", "err", err)
		}
	}()
	return done
}

func (o *Options) heapProfile(ctx context.Context, w io.Writer) {
	if w == nil || o.APIToken == "" {
		return
	}
	if err := o.fetch(ctx, pprofURL(o.BaseURL, "heap"), w, time.Minute); err != nil {
		o.Logger.Warn("bench: heap profile", "err", err)
	}
}

func (o *Options) fetch(ctx context.Context, url string, w io.Writer, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.APIToken)
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// percentiles of values (sorted in place): p50, p95, p99 by nearest rank.
func percentiles(values []float64) (p50, p95, p99 float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	sort.Float64s(values)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(values)))) - 1
		return values[max(0, min(i, len(values)-1))]
	}
	return at(.50), at(.95), at(.99)
}

// machine describes where the bench ran.
func machine() Machine {
	return Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
}
