// Package registrytest has what tests of providers build them with: settings held in a map,
// and a recorder of the settings a provider reads.
package registrytest

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/registry"
)

// Settings are settings by environment variable, as written; a name not in the map reads
// as empty. Durations, numbers and booleans parse as the configuration writes them.
type Settings map[string]string

var _ registry.Settings = Settings(nil)

func (s Settings) Value(env string) string { return s[env] }

func (s Settings) Duration(env string) time.Duration {
	d, _ := time.ParseDuration(s[env])
	return d
}

func (s Settings) Int(env string) int {
	n, _ := strconv.Atoi(s[env])
	return n
}

func (s Settings) Bool(env string) bool {
	b, _ := strconv.ParseBool(s[env])
	return b
}

// Source says "test" for a name in the map and "default" for any other.
func (s Settings) Source(env string) string {
	if _, ok := s[env]; ok {
		return "test"
	}
	return "default"
}

// Recorder passes reads on to Settings and remembers every name read, so a test can hold a
// provider to the settings it declares.
type Recorder struct {
	Settings registry.Settings
	mu       sync.Mutex
	read     []string
}

var _ registry.Settings = (*Recorder)(nil)

func (r *Recorder) note(env string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.read, env) {
		r.read = append(r.read, env)
	}
}

// Read are the names read so far, in the order first read.
func (r *Recorder) Read() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.read)
}

func (r *Recorder) Value(env string) string { r.note(env); return r.Settings.Value(env) }

func (r *Recorder) Duration(env string) time.Duration {
	r.note(env)
	return r.Settings.Duration(env)
}

func (r *Recorder) Int(env string) int   { r.note(env); return r.Settings.Int(env) }
func (r *Recorder) Bool(env string) bool { r.note(env); return r.Settings.Bool(env) }

func (r *Recorder) Source(env string) string { r.note(env); return r.Settings.Source(env) }
