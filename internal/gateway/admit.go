package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// storeTimeout bounds the store work done while a call is being admitted or ended.
const storeTimeout = 5 * time.Second

// admit starts a call on a carrier's leg: its journal, its store record and session, its
// transcript writer, then the engine.
func (s *server) admit(leg voice.Leg) (<-chan struct{}, error) {
	info := leg.Info()
	now := time.Now()
	journal, err := obs.Create(s.cfg.DataDir, string(info.CallID), now)
	if err != nil {
		return nil, err
	}
	if r, ok := leg.(voice.Reporting); ok {
		// The carrier's events (a SIP trunk's INVITE) go in once call.start is written:
		// a journal begins with call.start, and replay and trace read it so.
		var once sync.Once
		journal.Tee(func(e obs.Event) {
			if e.Type == obs.CallStart {
				// Tee runs under the journal's lock, which Record takes: report from elsewhere.
				once.Do(func() { go r.ReportTo(func(e voice.LegEvent) { journal.Record(e.At, legEvent(e)) }) })
			}
		})
	}
	if sc, ok := leg.(voice.SendClocked); ok {
		sc.ObserveSends(s.metrics.RTPSent)
	}
	if live, ok := leg.(interface{ Observe(obs.Event) }); ok {
		journal.Tee(live.Observe) // the browser page shows the call as it happens
	}
	s.traceCall(journal, info.CallID)
	s.followOnDashboard(journal, info.CallID)
	sc := session.NewContext(info, s.sec.callerHash).Require(session.Trust(s.cfg.Session.CallerMemoryAttestation))
	cc := s.callCfg
	cc.CallerHash, cc.Caller = sc.CallerHash, string(sc.Caller)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	plan := s.record(ctx, info, sc, journalPath(s.cfg.DataDir, info.CallID), now)
	if plan.firstMessage != "" {
		cc.Turn.FirstMessage = plan.firstMessage
	}
	cc.Turn.Voicemail = plan.voicemail
	if plan.voicemail && info.AnsweredBy == string(carrier.AnsweredMachine) {
		// Judged during the greeting by a carrier that cannot hear the beep: the message
		// waits for the greeting's end, or it would be spoken over it.
		cc.Turn.AwaitGreeting = true
		cc.Turn.GreetingQuiet, cc.Turn.NoGreeting = greetingQuiet, noGreeting
	}
	rec := s.recorderFor(&cc, info, journal)
	c, err := s.calls.Start(cc, call.Deps{
		Leg: leg, STT: s.prov.stt, TTS: s.prov.tts, Agent: s.prov.agent, NewVAD: s.prov.newVAD,
		STTFallback: s.prov.sttFallback, TTSFallback: s.prov.ttsFallback,
		Clock: clock.Real{}, Journal: journal,
		Logger:      s.log.With("caller_hash", cc.CallerHash),
		CallContext: func(ctx context.Context) context.Context { return session.With(ctx, sc) },
		Transcript:  s.lines.Add,
		Metrics:     s.metrics,
		Recorder:    rec,
	})
	if err != nil {
		discardRecording(rec)
		_ = journal.Close()
		s.endRecord(info.CallID, "refused: "+err.Error())
		return nil, err
	}
	s.metrics.CallStarted(info.Carrier, string(info.Direction))
	s.ending.Add(1)
	go func() {
		defer s.ending.Done()
		<-c.Done()
		s.metrics.CallEnded(c.Reason().String())
		s.endRecord(info.CallID, c.Reason().String())
	}()
	if s.onCall != nil {
		s.onCall(c)
	}
	s.log.Info("call started", "call", info.CallID, "carrier", info.Carrier, "direction", info.Direction,
		"caller", sc.Caller, "attestation", info.Attestation)
	return c.Done(), nil
}

func journalPath(dataDir string, id voice.CallID) string {
	return filepath.Join(obs.Dir(dataDir, string(id)), "events.jsonl")
}

// callPlan is what an outbound call's job asks of the engine.
type callPlan struct {
	firstMessage string
	voicemail    bool // a machine answered and the message is to be left on it
}

// record writes the call and its caller's session to the store. An outbound call placed
// by a job already has a record: it gains this node and journal, and its job says what to
// say. The store failing never stops a call: it is logged.
func (s *server) record(ctx context.Context, info voice.LegInfo, sc session.Context, journal string, now time.Time) callPlan {
	var plan callPlan
	rec, err := s.st.Call(ctx, info.CallID)
	switch {
	case err == nil:
		err = s.st.UpdateCall(ctx, info.CallID, store.CallUpdate{CarrierRef: info.CarrierRef, Node: s.node, Journal: journal})
		plan = s.planFor(ctx, rec, info)
	case errors.Is(err, store.ErrNotFound):
		err = s.st.StartCall(ctx, store.Call{
			ID: info.CallID, Carrier: info.Carrier, CarrierRef: info.CarrierRef, Direction: info.Direction,
			From: info.From, To: info.To, CallerHash: sc.CallerHash, Agent: s.prov.agent.Name(), Node: s.node,
			StartedAt: now, Journal: journal,
		})
	}
	if err != nil {
		s.log.Warn("call not recorded in the store", "call", info.CallID, "err", err)
	}
	if sc.CallerHash != "" {
		if _, err := s.st.TouchSession(ctx, sc.CallerHash, s.keys(sc), info.CallID, now); err != nil {
			s.log.Warn("caller session not recorded", "call", info.CallID, "err", err)
		}
	}
	return plan
}

// A voicemail greeting is over once the line has been quiet this long after it (the
// pause before a mailbox's beep is shorter, the beep itself is speech to the VAD); one
// that has not begun by noGreeting is not coming.
const (
	greetingQuiet = 1200 * time.Millisecond
	noGreeting    = 5 * time.Second
)

// planFor reads the job that placed rec: its first message, and whether a machine that
// answered gets it as a voicemail.
func (s *server) planFor(ctx context.Context, rec store.Call, info voice.LegInfo) callPlan {
	if rec.JobID == 0 {
		return callPlan{}
	}
	j, err := s.st.Job(ctx, rec.JobID)
	if err != nil {
		s.log.Warn("the job that placed the call is unreadable", "call", rec.ID, "job", rec.JobID, "err", err)
		return callPlan{}
	}
	var job jobs.CallJob
	if err := json.Unmarshal(j.Payload, &job); err != nil {
		return callPlan{}
	}
	policy := carrier.MachinePolicy(job.OnMachine)
	if policy == "" {
		policy = carrier.MachinePolicy(s.cfg.Outbound.Machine)
	}
	return callPlan{firstMessage: job.FirstMessage, voicemail: info.Machine() && policy == carrier.MachineMessage}
}

// endingWithin bounds how long a stopping server waits for its ended calls' records: each
// is a store write or two and a journal read, each bounded by storeTimeout.
const endingWithin = 3 * storeTimeout

// waitEnded waits, once the calls are stopped, until every ended call's record is written,
// so the store is not closed under them (and a command's output is not written to after it
// returned).
func (s *server) waitEnded() {
	done := make(chan struct{})
	go func() { s.ending.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(endingWithin):
		s.log.Warn("stopped without the records of some ended calls", "waited", endingWithin)
	}
}

// endRecord records how a call ended, and what its journal says of it. The call's
// transcript lines are saved first: whoever sees the call ended (a delivery job on any
// node, the summary) reads its whole transcript.
func (s *server) endRecord(id voice.CallID, outcome string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.lines.Flush(ctx); err != nil {
		s.log.Warn("call's transcript not saved before its end", "call", id, "err", err)
	}
	if err := s.st.EndCall(ctx, id, time.Now(), outcome); err != nil {
		s.log.Warn("call end not recorded in the store", "call", id, "err", err)
	}
	s.summarize(ctx, id) // summary.go
}

// onProgress records what a carrier reports of the calls Handset placed: the carrier's id
// as soon as it is known, and the end of a call nobody answered (or that a machine
// answered and Handset declined). An answered call's end is the media node's to record;
// the carrier's "completed" only closes a call whose media never arrived.
func (s *server) onProgress(p carrier.Progress) {
	if p.CallID == "" {
		return // an inbound call: its engine records everything
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if p.Ref != "" {
		if err := s.st.UpdateCall(ctx, p.CallID, store.CallUpdate{CarrierRef: p.Ref}); err != nil {
			s.log.Warn("status callback for an unknown call", "call", p.CallID, "err", err)
			return
		}
	}
	if !p.Ended() {
		return
	}
	outcome := string(p.Status)
	switch {
	case p.Declined:
		outcome = declinedOutcome
	case p.Status == carrier.StatusCompleted:
		if rec, err := s.st.Call(ctx, p.CallID); err != nil || rec.Journal != "" {
			return
		}
	}
	if err := s.st.EndCall(ctx, p.CallID, time.Now(), outcome); err != nil {
		s.log.Warn("call end not recorded", "call", p.CallID, "err", err)
	}
}

// declinedOutcome is how a call record says a machine answered and Handset hung up.
const declinedOutcome = "machine"

// FlushTranscript saves the transcript lines still queued (a handoff reads the call's).
func (s *server) FlushTranscript(ctx context.Context, _ voice.CallID) error {
	return s.lines.Flush(ctx)
}

// legEvent is a leg's own event as the journal writes it.
func legEvent(e voice.LegEvent) obs.Event {
	if e.Kind == voice.LegFirstOut {
		return obs.Event{Type: obs.MediaFirstOut}
	}
	return obs.Event{Type: obs.CarrierSignal, Name: e.Name, Kind: e.Direction, Reason: e.Reason}
}
