//go:build !embedded

package sphinx

// linked is false: this build has no PocketSphinx binding (see ErrNotLinked).
const linked = false

// newDecoder is never reached: New returns ErrNotLinked first.
func newDecoder(string) (decoder, error) { return nil, ErrNotLinked }

// coldPriors are PocketSphinx's starting normalisation states: none without it.
func coldPriors() map[int][]float32 { return nil }
