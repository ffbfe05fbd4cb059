package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/webrtc"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
)

// buildVAD picks the voice activity detector: the one HANDSET_VAD names, or the best
// available (Silero, then WebRTC, then energy), saying why it chose.
func buildVAD(cfg *config.Config, log *slog.Logger) (func(rate int) (vad.Detector, error), func(), error) {
	choice := cfg.VAD.Engine
	if choice == config.VADSilero || choice == "" {
		f, err := SileroVAD(cfg)
		if err == nil {
			log.Info("voice activity detection: silero")
			return f, func() {}, nil
		}
		if choice != "" {
			return nil, nil, fmt.Errorf("HANDSET_VAD=silero: %w", err)
		}
		log.Info("silero VAD unavailable, trying webrtc", "why", err)
	}
	if choice == config.VADWebRTC || choice == "" {
		f, closeFn, err := WebRTCVAD(cfg)
		if err == nil {
			log.Info("voice activity detection: webrtc")
			return f, closeFn, nil
		}
		if choice != "" {
			return nil, nil, fmt.Errorf("HANDSET_VAD=webrtc: %w", err)
		}
		log.Warn("webrtc VAD unavailable, falling back to the energy VAD (weak in noise)", "why", err)
	}
	log.Info("voice activity detection: energy")
	return func(rate int) (vad.Detector, error) {
		return vad.NewEnergy(vad.EnergyConfig{Rate: rate, StartAfter: cfg.VAD.Start, EndAfter: cfg.VAD.End})
	}, func() {}, nil
}

// SileroVAD loads the Silero detector from its engine files (doctor checks it as serve
// would load it).
func SileroVAD(cfg *config.Config) (func(rate int) (vad.Detector, error), error) {
	if !silero.Available() {
		return nil, errors.New("not linked into this build (build with -tags embedded: ./scripts/setup.sh does)")
	}
	lib, err := engines.File(cfg, engines.ORTLibFile)
	if err != nil {
		return nil, err
	}
	model, err := engines.File(cfg, engines.SileroModelFile)
	if err != nil {
		return nil, err
	}
	if err := silero.Init(lib); err != nil {
		return nil, err
	}
	return func(rate int) (vad.Detector, error) {
		return silero.New(silero.Config{
			ModelPath: model, Rate: rate, Activation: cfg.VADThreshold(),
			MinSpeech: cfg.VAD.Start, MinSilence: cfg.VAD.End,
		})
	}, nil
}

// WebRTCVAD loads the WebRTC detector's engine; the func it returns frees it.
func WebRTCVAD(cfg *config.Config) (func(rate int) (vad.Detector, error), func(), error) {
	path, err := engines.File(cfg, engines.FVADFile)
	if err != nil {
		return nil, nil, err
	}
	engine, err := webrtc.LoadEngine(context.Background(), path)
	if err != nil {
		return nil, nil, err
	}
	return func(rate int) (vad.Detector, error) {
			return engine.NewDetector(webrtc.Config{Rate: rate, StartAfter: cfg.VAD.Start, EndAfter: cfg.VAD.End})
		}, func() {
			_ = engine.Close(context.Background())
		}, nil
}
