package call

import "sync"

// frameBuf is one 20 ms frame of outbound audio. Synthesis fills one from a pool shared
// by every call with the same frame size; the playout gives it back once the frame is
// sent or dropped, so speaking allocates nothing per frame once the process has warmed up.
type frameBuf struct{ b []byte }

// framePools are the pools by frame size (a handful of sizes: one per audio format).
var (
	framePoolsMu sync.Mutex
	framePools   = map[int]*sync.Pool{}
)

// framePool returns the pool of frames of size bytes (looked up once per call).
func framePool(size int) *sync.Pool {
	framePoolsMu.Lock()
	defer framePoolsMu.Unlock()
	p := framePools[size]
	if p == nil {
		p = &sync.Pool{New: func() any { return &frameBuf{b: make([]byte, size)} }}
		framePools[size] = p
	}
	return p
}
