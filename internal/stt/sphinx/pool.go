package sphinx

import "sync"

// decoder is one loaded PocketSphinx decoder: in builds with the tag embedded a cgo
// ps_decoder_t, in tests a fake. One goroutine at a time uses it, between taking it from
// the pool and giving it back.
type decoder interface {
	// start begins an utterance from the cepstral mean normalisation state cmn (an opaque
	// snapshot that end returned; it holds the running estimate of the channel that
	// PocketSphinx subtracts from every frame), or from a new decoder's state when cmn is
	// nil.
	start(cmn []float32) error
	// process decodes the next samples of the utterance (16 kHz PCM16).
	process(pcm []int16) error
	// partial is the best hypothesis of the utterance so far (cheap: microseconds).
	partial() string
	// end ends the utterance and returns its final hypothesis and the normalisation state
	// its audio left.
	end() (hyp string, cmn []float32, err error)
	// close frees the decoder; it is not used afterwards.
	close()
}

// pool hands decoders out for one utterance at a time. Streams that find none free wait
// in line (first come, first served) holding a ticket; a decoder given back goes straight
// to the first ticket in line.
type pool struct {
	mu      sync.Mutex // guards following
	free    []decoder
	waiters []*ticket
	closed  bool
}

// ticket is one request for a decoder. Its channel receives the decoder once it is this
// ticket's turn, and is closed instead if the pool closes first.
type ticket struct {
	ch chan decoder // buffered: the pool never blocks handing over
}

func newPool(decs []decoder) *pool {
	return &pool{free: append([]decoder(nil), decs...)}
}

// request asks for a decoder. When one is free and nobody is waiting, the ticket's
// channel already holds it.
func (p *pool) request() *ticket {
	t := &ticket{ch: make(chan decoder, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		close(t.ch)
	case len(p.free) > 0 && len(p.waiters) == 0:
		d := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		t.ch <- d
	default:
		p.waiters = append(p.waiters, t)
	}
	return t
}

// release gives a decoder back: to the first ticket in line, or to the free list. After
// close it frees the decoder.
func (p *pool) release(d decoder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(d)
}

func (p *pool) releaseLocked(d decoder) {
	switch {
	case p.closed:
		d.close()
	case len(p.waiters) > 0:
		t := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		t.ch <- d
	default:
		p.free = append(p.free, d)
	}
}

// cancel withdraws a ticket whose owner no longer wants a decoder. If the decoder was
// already handed to it (and not received), the decoder goes back to the pool.
func (p *pool) cancel(t *ticket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, w := range p.waiters {
		if w == t {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			return
		}
	}
	select {
	case d, ok := <-t.ch:
		if ok {
			p.releaseLocked(d)
		}
	default:
	}
}

// close fails every ticket in line and frees the free decoders; a decoder still out is
// freed when it is given back. Recognizer.Close ends every stream first, so none is.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, t := range p.waiters {
		close(t.ch)
	}
	p.waiters = nil
	for _, d := range p.free {
		d.close()
	}
	p.free = nil
}

// counts is how many decoders are free and how many tickets wait, for tests and logs.
func (p *pool) counts() (free, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free), len(p.waiters)
}
