package vadtest

import (
	"testing"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// energy exposes the energy VAD's per-frame level decision as RawSpeech.
type energy struct{ *vad.Energy }

func (e energy) RawSpeech() bool {
	cfg, l := e.Config(), e.LevelDBFS()
	return l >= cfg.MinLevelDBFS && l > e.NoiseFloorDBFS()+cfg.ThresholdDB
}

var energyCandidate = Candidate{
	Name: "energy",
	New: func(rate int) (vad.Detector, func(), error) {
		e, err := vad.NewEnergy(vad.EnergyConfig{Rate: rate})
		if err != nil {
			return nil, nil, err
		}
		return energy{e}, func() {}, nil
	},
	Lags: func(int) Lags { return Lags{Start: vad.DefaultStartAfter, End: vad.DefaultEndAfter} },
}

func TestEnergyAccuracyOnRealSpeech(t *testing.T) {
	for _, phone := range []bool{false, true} {
		results := Evaluate(t, energyCandidate, Conditions(phone))
		CheckClean(t, "energy", results, Floors{RawF1: 0.85, SegmentF1: 0.85, AllDetected: true})
	}
}
