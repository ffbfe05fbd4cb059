//go:build !embedded

package flite

// linked is false: this build has no flite (see BuildTag).
const linked = false

func loadVoice(string) (speaker, error) { return nil, ErrNotLinked }
