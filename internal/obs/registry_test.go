package obs_test

// Diagnose's advice for an agent runtime comes from the registry: the tests need the
// catalogue filled, as the binary has it. An external test package, because providers may
// import obs.
import _ "github.com/handset-voice/handset/internal/providers"
