package g722

// Encoder turns 16 kHz PCM16 into G.722 bytes, one byte per two samples. Its zero value
// is not ready: use NewEncoder.
type Encoder struct {
	qmfLine [24]int32 // input history for the analysis filter, newest last
	low     band
	high    band
	carry   [4]byte // bytes of an incomplete sample pair left by the last Encode
	carried int
}

// NewEncoder returns an encoder in the standard's initial state.
func NewEncoder() *Encoder {
	e := &Encoder{}
	e.Reset()
	return e
}

// Reset returns the encoder to its initial state, as at the start of a stream.
func (e *Encoder) Reset() {
	*e = Encoder{}
	e.low.resetLow()
	e.high.resetHigh()
}

// Encode appends the G.722 code of pcm (16-bit little-endian samples at 16000 Hz) to dst
// and returns it. A byte stands for a pair of samples: a trailing partial pair is kept and
// completed by the next call, so any cut of a stream encodes the same.
func (e *Encoder) Encode(dst, pcm []byte) []byte {
	for e.carried > 0 && len(pcm) > 0 {
		e.carry[e.carried] = pcm[0]
		pcm = pcm[1:]
		e.carried++
		if e.carried == 4 {
			e.carried = 0
			dst = append(dst, e.encodePair(sample(e.carry[0], e.carry[1]), sample(e.carry[2], e.carry[3])))
		}
	}
	for len(pcm) >= 4 {
		dst = append(dst, e.encodePair(sample(pcm[0], pcm[1]), sample(pcm[2], pcm[3])))
		pcm = pcm[4:]
	}
	if e.carried == 0 {
		e.carried = copy(e.carry[:], pcm)
	}
	return dst
}

func sample(lo, hi byte) int32 { return int32(int16(uint16(lo) | uint16(hi)<<8)) }

// encodePair runs the analysis QMF over two input samples and codes the resulting lower
// and higher band samples.
func (e *Encoder) encodePair(x0, x1 int32) byte {
	copy(e.qmfLine[:], e.qmfLine[2:])
	e.qmfLine[22], e.qmfLine[23] = x0, x1
	// qmfLine[23-k] is x(j-k); even taps see even delays.
	var even, odd int32
	for k := 0; k < 24; k += 2 {
		even += qmf[k] * e.qmfLine[23-k]
		odd += qmf[k+1] * e.qmfLine[22-k]
	}
	// 16-bit input: >>14 gives the standard's 15-bit sub-band range.
	low := (even + odd) >> 14
	high := (even - odd) >> 14
	return byte(e.high.encodeHigh(high)<<6 | e.low.encodeLow(low))
}

func (b *band) encodeLow(x int32) int32 {
	el := saturate(x - b.signal)
	mag := el
	if el < 0 {
		mag = -(el + 1)
	}
	i := 1
	for ; i < 30; i++ {
		if mag < (q6[i]*b.step)>>12 {
			break
		}
	}
	code := lowPositive[i]
	if el < 0 {
		code = lowNegative[i]
	}
	b.updateLow(code)
	return code
}

// updateLow adapts the lower band from a 6-bit code; only its top four bits count.
func (b *band) updateLow(code int32) {
	top := code >> 2
	d := (b.step * qm4[top]) >> 15
	b.adaptScale(lowLogFactor[lowMagnitude[top]])
	b.adaptPredictor(d)
}

func (b *band) encodeHigh(x int32) int32 {
	eh := saturate(x - b.signal)
	mag := eh
	if eh < 0 {
		mag = -(eh + 1)
	}
	level := 1
	if mag >= (564*b.step)>>12 {
		level = 2
	}
	code := highPositive[level]
	if eh < 0 {
		code = highNegative[level]
	}
	b.updateHigh(code)
	return code
}

func (b *band) updateHigh(code int32) {
	d := (b.step * qm2[code]) >> 15
	b.adaptScale(highLogFactor[highMagnitude[code]])
	b.adaptPredictor(d)
}
