package config

import (
	"strings"

	"github.com/handset-voice/handset/internal/registry"
)

// registryNames is how messages list the providers of a kind: every registered one, so a
// test does not change when a provider is added.
func registryNames(k registry.Kind) string { return strings.Join(registry.Names(k), ", ") }
