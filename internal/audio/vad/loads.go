package vad

// Loads reports whether an engine makes detectors: it makes one 8 kHz detector and frees it
// and the engine (release, when not nil), as doctor does to prove an engine before a call.
func Loads(newDetector func(rate int) (Detector, error), release func()) error {
	if release != nil {
		defer release()
	}
	det, err := newDetector(8000)
	if err != nil {
		return err
	}
	if c, ok := det.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	return nil
}

// EngineFix is what to do when a chosen VAD engine cannot load.
const EngineFix = "run ./scripts/engines.sh (or ./scripts/setup.sh), or set HANDSET_ENGINES_DIR, or choose another HANDSET_VAD"
