// Package providers registers every provider this binary has, one line each: adding a
// carrier, a speech engine, a voice or an agent runtime is its own package plus a line here
// (docs/architecture.md, adding a provider).
package providers

import "github.com/handset-voice/handset/internal/registry"

func init() {
	registry.Register(
	// carriers

	// speech to text

	// text to speech

	// agent runtimes

	// voice activity detectors
	)
}
