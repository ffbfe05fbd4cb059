package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// BenchNewest is when the newest call of GenerateCalls starts; the calls before it spread
// over the thirty days before.
var BenchNewest = time.Date(2031, 3, 14, 12, 0, 0, 0, time.UTC)

// Words of GenerateCalls's transcripts: BenchCommonWord is on about a third of the lines,
// BenchRareWord on the lines of one call in five thousand.
const (
	BenchCommonWord = "please"
	BenchRareWord   = "zeppelin"
)

// weighted picks from a list by weight out of 1000.
type weighted []struct {
	v string
	w int
}

func (ws weighted) pick(r *rand.Rand) string {
	n := r.IntN(1000)
	for _, x := range ws {
		if n -= x.w; n < 0 {
			return x.v
		}
	}
	return ws[len(ws)-1].v
}

var (
	benchCarriers = weighted{{"twilio", 600}, {"telnyx", 200}, {"browser", 150}, {"vonage", 50}}
	benchOutcomes = weighted{{"caller_hangup", 550}, {"agent_hangup", 250}, {"transferred", 80}, {"error", 60},
		{"no_answer", 50}, {store.OutcomeNodeLost, 8}, {"", 2}} // "": still running
	benchStages = weighted{{"", 950}, {"stt", 15}, {"agent", 15}, {"tts", 10}, {"carrier", 5}, {"playout", 5}}
	benchNouns  = strings.Fields(`order refund delivery account password invoice appointment booking parcel address
		payment card balance subscription plan upgrade ticket flight hotel table reservation doctor prescription
		insurance claim policy meeting schedule contract warranty repair engineer router signal outage bill`)
	benchVerbs = strings.Fields(`cancel change check confirm move track reset pay book update renew report find
		send deliver arrive return replace transfer speak explain`)
	benchFiller = strings.Fields(`I would like to my the a for is it can you help with this that when where
		yesterday today tomorrow morning afternoon thanks sure okay yes no right now again still already`)
)

// GenerateCalls makes n calls, the same every run, newest last: carriers, outcomes and
// broken stages mixed as a busy deployment's, six to ten transcript lines each from a
// vocabulary of a few hundred words. fn gets each call with its lines.
func GenerateCalls(n int, fn func(c store.Call, lines []store.TranscriptLine) error) error {
	r := rand.New(rand.NewPCG(18, 100_000))
	span := 30 * 24 * time.Hour
	step := span / time.Duration(n)
	for i := range n {
		started := BenchNewest.Add(-span + time.Duration(i)*step).Truncate(time.Second) // many share a second
		c := store.Call{
			ID:         voice.CallID(fmt.Sprintf("c_%07d", i)),
			Carrier:    benchCarriers.pick(r),
			Direction:  voice.Inbound,
			From:       fmt.Sprintf("+1555%07d", r.IntN(20_000)),
			To:         "+15550000000",
			CallerHash: fmt.Sprintf("ch_%05d", r.IntN(20_000)),
			Agent:      "hermes",
			Node:       "node-1",
			StartedAt:  started,
			Outcome:    benchOutcomes.pick(r),
			Journal:    fmt.Sprintf("/data/calls/c_%07d/events.jsonl", i),
		}
		if c.Outcome != "" {
			c.EndedAt = started.Add(time.Duration(20+r.IntN(400)) * time.Second)
		}
		nlines := 6 + r.IntN(5)
		c.Summary = store.CallSummary{Turns: nlines / 2, Interrupted: r.IntN(2)}
		if c.Summary.Stage = benchStages.pick(r); c.Summary.Stage != "" {
			c.Summary.Problem = "the " + c.Summary.Stage + " stage failed"
		}
		lines := make([]store.TranscriptLine, nlines)
		for l := range lines {
			role := voice.RoleUser
			if l%2 == 1 {
				role = voice.RoleAssistant
			}
			words := make([]string, 0, 12)
			for range 4 + r.IntN(8) {
				switch k := r.IntN(10); {
				case k < 3:
					words = append(words, benchNouns[r.IntN(len(benchNouns))])
				case k < 5:
					words = append(words, benchVerbs[r.IntN(len(benchVerbs))])
				default:
					words = append(words, benchFiller[r.IntN(len(benchFiller))])
				}
			}
			if r.IntN(3) == 0 {
				words = append(words, BenchCommonWord)
			}
			if i%5000 == 4999 {
				words = append(words, BenchRareWord)
			}
			lines[l] = store.TranscriptLine{CallID: c.ID, Turn: l/2 + 1, Role: role, Text: strings.Join(words, " "),
				At: started.Add(time.Duration(l*5) * time.Second), Interrupted: role == voice.RoleAssistant && r.IntN(10) == 0}
		}
		if err := fn(c, lines); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkListCalls times the dashboard's call listings on s, seeded with GenerateCalls:
// each must answer well within 200 ms.
func BenchmarkListCalls(b *testing.B, s store.Store) {
	ctx := b.Context()
	// The 50th page's cursor, by paging there.
	var deep store.ListCalls
	for range 49 {
		page, err := s.Calls(ctx, deep)
		if err != nil || len(page) == 0 {
			b.Fatalf("paging to page 50: %d calls, %v", len(page), err)
		}
		deep.Before, deep.BeforeID = page[len(page)-1].StartedAt, page[len(page)-1].ID
	}
	cases := []struct {
		name string
		f    store.ListCalls
	}{
		{"FirstPage", store.ListCalls{}},
		{"Page50", deep},
		{"Outcome", store.ListCalls{Outcome: "transferred"}},
		{"CarrierSince", store.ListCalls{Carrier: "browser", Since: BenchNewest.Add(-7 * 24 * time.Hour)}},
		{"Broken", store.ListCalls{Broken: true}},
		{"RareWord", store.ListCalls{Text: BenchRareWord}},
		{"CommonWord", store.ListCalls{Text: BenchCommonWord}},
		{"CommonWordPrefix", store.ListCalls{Text: "refund pl"}},
		{"Live", store.ListCalls{Live: true}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				calls, err := s.Calls(ctx, tc.f)
				if err != nil {
					b.Fatal(err)
				}
				n = len(calls)
			}
			if n == 0 {
				b.Fatalf("Calls(%+v) found nothing", tc.f)
			}
			b.ReportMetric(float64(n), "calls/op")
		})
	}
}

// BenchmarkCarrierMemory times what a carrier's webhooks ask of the store for one call: the
// answer kept, the stream opened, a name seen once, three ledger words and a read back.
func BenchmarkCarrierMemory(b *testing.B, s store.Store) {
	ctx := b.Context()
	b.Run("Answer", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ref := fmt.Sprintf("bench-answer-%d", i)
			if _, _, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "telnyx", Ref: ref, Answer: []byte("answer"), CreatedAt: BenchNewest}); err != nil {
				b.Fatal(err)
			}
			if err := s.OpenCarrierStream(ctx, "telnyx", ref, BenchNewest); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Ledger", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ref := fmt.Sprintf("bench-ledger-%d", i)
			if _, err := s.CarrierOnce(ctx, "telnyx", ref, BenchNewest); err != nil {
				b.Fatal(err)
			}
			for rank, status := range []string{"ringing", "in-progress", "completed"} {
				p := store.CarrierProgress{Carrier: "telnyx", Ref: ref, Status: status, StatusRank: rank + 2, At: BenchNewest}
				if _, err := s.RecordCarrierProgress(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.CarrierProgress(ctx, "telnyx", ref); err != nil {
				b.Fatal(err)
			}
		}
	})
}
