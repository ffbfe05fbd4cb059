package config_test

// The agent runtimes' defaults (address, model, key variable) come from the registry: the
// tests need the catalogue filled, as the binary has it. An external test package, so a
// provider may import anything of its own without a cycle through these tests.
import _ "github.com/handset-voice/handset/internal/providers"
