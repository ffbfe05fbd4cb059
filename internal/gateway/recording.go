package gateway

import (
	"context"
	"os"
	"time"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/recording"
	"github.com/handset-voice/handset/internal/voice"
)

// recordingSweepEvery is how often this node deletes its recordings past
// HANDSET_RECORD_RETENTION.
const recordingSweepEvery = time.Hour

// recorderFor is the call's recorder when HANDSET_RECORD is on, with the notice put in cc;
// nil when recording is off, or when the file cannot be made (logged: the call goes on
// unrecorded, and then without the notice).
func (s *server) recorderFor(cc *call.Config, info voice.LegInfo, journal *obs.Journal) call.Recorder {
	if !s.cfg.Record.On {
		return nil
	}
	path, err := recording.PathOf(s.cfg.DataDir, string(info.CallID))
	if err == nil {
		var rec *recording.Recorder
		rec, err = recording.New(recording.Options{Path: path, Format: info.Format, Journal: journal,
			Logger: s.log.With("call", string(info.CallID))})
		if err == nil {
			cc.Turn.Notice = s.cfg.Record.Notice
			return rec
		}
	}
	s.log.Error("call not recorded", "call", info.CallID, "err", err)
	return nil
}

// discardRecording removes the file of a recorder whose call never started.
func discardRecording(rec call.Recorder) {
	if r, ok := rec.(*recording.Recorder); ok {
		_ = r.Close(time.Now())
		_ = os.Remove(r.Path())
	}
}

// sweepRecordings deletes, now and then every recordingSweepEvery until ctx ends, the
// recordings in this node's data dir older than HANDSET_RECORD_RETENTION (0: keeps them).
// It returns once the sweeping has stopped.
func (s *server) sweepRecordings(ctx context.Context) {
	keep := s.cfg.Record.Retention
	if keep <= 0 {
		return
	}
	t := time.NewTicker(recordingSweepEvery)
	defer t.Stop()
	for {
		n, err := recording.Sweep(s.cfg.DataDir, keep, time.Now())
		switch {
		case err != nil:
			s.log.Warn("could not delete every old recording", "deleted", n, "err", err)
		case n > 0:
			s.log.Info("deleted recordings past their retention", "count", n, "retention", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
