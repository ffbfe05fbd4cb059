package bridge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

// The load: 200 conversations at once, each streaming a turn, pausing a random while (think
// on average, so the conversations do not march in step), and streaming the next, against
// a runtime that takes pieceEvery before each piece of its reply.
const (
	streams    = 200
	think      = 500 * time.Millisecond
	pieceEvery = 50 * time.Millisecond
)

// BenchmarkFirstText measures what the bridge adds to time to first text at 200 concurrent
// streams. The same client streams turns from the (fake) Hermes directly, then through the
// bridge in front of it. Each turn's added time is exact: from the client's request to the
// runtime receiving it, plus from the runtime writing its first text to the client reading
// it; the runtime's own wait is not in it. The bridge's cost is the bridged figure minus
// the direct one (BENCHMARKS.md):
//
//	go test -run '^$' -bench FirstText -benchtime 6000x ./internal/bridge/
func BenchmarkFirstText(b *testing.B) {
	fake := fakehermes.New(fakehermes.Options{Key: "hermes-key", SlowEvery: pieceEvery})
	st := &stamps{recv: map[string]time.Time{}, first: map[string]time.Time{}}
	hs := httptest.NewServer(st.wrap(fake))
	defer func() { fake.Close(); hs.Close() }()
	agent, err := hermes.New(hermes.Options{BaseURL: hs.URL + "/v1", Key: "hermes-key", Transport: hermes.TransportChat})
	if err != nil {
		b.Fatal(err)
	}
	h, err := bridge.New(bridge.Options{Agent: agent, Token: token, MaxTurns: 10 * streams, Rate: 1 << 30,
		CallerHash: func(n string) string { return session.CallerHash(secret, n) }})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	bs := httptest.NewServer(mux)
	defer bs.Close()
	var seq atomic.Int64
	for _, target := range []struct {
		name, url, key string
		bridged        bool
	}{
		{"direct", hs.URL + "/v1", "hermes-key", false},
		{"bridged", bs.URL + "/v1", token, true},
	} {
		b.Run(target.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
			defer client.CloseIdleConnections()
			var (
				mu                    sync.Mutex
				added, first, in, out []time.Duration
				wg                    sync.WaitGroup
			)
			work := make(chan int)
			b.ResetTimer()
			for range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(rand.N(2 * think))
					for range work {
						id := fmt.Sprintf("bench-%d", seq.Add(1))
						sent, got, err := firstText(client, target.url, target.key, id, target.bridged)
						if err != nil {
							b.Error(err)
							continue
						}
						recv, wrote, ok := st.of("handset-bridge-" + id)
						if !ok {
							b.Errorf("%s: the runtime's times are missing", id)
							continue
						}
						mu.Lock()
						added = append(added, recv.Sub(sent)+got.Sub(wrote))
						in, out = append(in, recv.Sub(sent)), append(out, got.Sub(wrote))
						first = append(first, got.Sub(sent))
						mu.Unlock()
						time.Sleep(rand.N(2 * think))
					}
				}()
			}
			for n := range b.N {
				work <- n
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(quantile(added, 0.50), "added-p50-ms")
			b.ReportMetric(quantile(added, 0.99), "added-p99-ms")
			b.ReportMetric(quantile(first, 0.99), "first-text-p99-ms")
			b.ReportMetric(quantile(in, 0.99), "in-p99-ms")
			b.ReportMetric(quantile(out, 0.99), "out-p99-ms")
		})
	}
}

// quantile of ds in milliseconds (0 for none).
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / float64(time.Millisecond)
}

// firstText streams one turn, and returns when its request went out and when its first
// text came back; it reads the stream to its end, as a client would. Direct, the client
// names the Hermes session itself as the bridge would have: the runtime's times are kept
// by session.
func firstText(client *http.Client, base, key, id string, bridged bool) (sent, got time.Time, err error) {
	body, _ := json.Marshal(map[string]any{"model": "hermes-agent", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "How late are you open today SLOW"}}})
	req, _ := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if bridged {
		req.Header.Set(bridge.HeaderSession, id)
	} else {
		req.Header.Set(hermes.HeaderSessionID, "handset-bridge-"+id)
	}
	sent = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return sent, got, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if got.IsZero() && hasText(sc.Bytes()) {
			got = time.Now()
		}
	}
	if got.IsZero() {
		return sent, got, fmt.Errorf("%s: no text in the stream (HTTP %d)", id, resp.StatusCode)
	}
	return sent, got, sc.Err()
}

// hasText reports whether an SSE line carries a piece of reply text.
func hasText(line []byte) bool {
	s := string(line)
	return strings.HasPrefix(s, "data: {") && strings.Contains(s, `"content":"`) && !strings.Contains(s, `"content":""`)
}

// stamps keeps, by Hermes session id, when the runtime received each request and when it
// wrote the first text of its answer.
type stamps struct {
	mu          sync.Mutex
	recv, first map[string]time.Time
}

func (s *stamps) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(hermes.HeaderSessionID)
		s.mu.Lock()
		s.recv[id] = time.Now()
		s.mu.Unlock()
		next.ServeHTTP(&stampWriter{ResponseWriter: w, stamp: func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, ok := s.first[id]; !ok {
				s.first[id] = time.Now()
			}
		}}, r)
	})
}

func (s *stamps) of(id string) (recv, first time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recv, ok1 := s.recv[id]
	first, ok2 := s.first[id]
	return recv, first, ok1 && ok2
}

// stampWriter stamps the first write that carries text, just before it is written.
type stampWriter struct {
	http.ResponseWriter
	stamp   func()
	stamped bool
}

func (w *stampWriter) Write(p []byte) (int, error) {
	if !w.stamped && hasTextIn(p) {
		w.stamped = true
		w.stamp()
	}
	return w.ResponseWriter.Write(p)
}

func hasTextIn(p []byte) bool {
	for _, line := range bytes.Split(p, []byte("\n")) {
		if hasText(line) {
			return true
		}
	}
	return false
}

func (w *stampWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
