package gateway

import (
	"errors"
	"log/slog"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// buildVAD picks the voice activity detector: the one HANDSET_VAD names, or else the best
// this binary and machine can run (the catalogue lists detectors best first: Silero, then
// WebRTC, then energy), saying why it passed each one over.
func buildVAD(cfg *config.Config, log *slog.Logger) (func(rate int) (vad.Detector, error), func(), error) {
	if choice := cfg.VAD.Engine; choice != "" {
		d, ok := registry.Find[registry.VAD](choice)
		if !ok {
			return nil, nil, notYet("HANDSET_VAD", choice)
		}
		return d.New(buildOf(cfg, "HANDSET_VAD", log))
	}
	all := registry.All[registry.VAD]()
	if len(all) == 0 {
		return nil, nil, errors.New("this binary has no voice activity detector")
	}
	var err error
	for i, d := range all {
		var f func(rate int) (vad.Detector, error)
		var release func()
		if f, release, err = d.New(buildOf(cfg, "", log)); err == nil {
			return f, release, nil
		}
		if i+1 < len(all) {
			next := all[i+1].Info().Name
			if i+2 == len(all) { // the last resort
				log.Warn(d.Info().Name+" VAD unavailable, falling back to the "+next+" VAD", "why", err)
			} else {
				log.Info(d.Info().Name+" VAD unavailable, trying "+next, "why", err)
			}
		}
	}
	return nil, nil, err
}
