package g722

// Decoder turns G.722 bytes into 16 kHz PCM16, two samples per byte. Its zero value is
// not ready: use NewDecoder.
type Decoder struct {
	qmfLine [24]int32 // sub-band history for the synthesis filter, newest last
	low     band
	high    band
}

// NewDecoder returns a decoder in the standard's initial state.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.Reset()
	return d
}

// Reset returns the decoder to its initial state, as at the start of a stream.
func (d *Decoder) Reset() {
	*d = Decoder{}
	d.low.resetLow()
	d.high.resetHigh()
}

// Decode appends the PCM16 (little-endian, 16000 Hz) of code to dst and returns it:
// 4 bytes out per byte in. Every byte string is valid G.722.
func (d *Decoder) Decode(dst, code []byte) []byte {
	for _, c := range code {
		low := d.low.decodeLow(int32(c & 0x3f))
		high := d.high.decodeHigh(int32(c >> 6))
		x0, x1 := d.synthesize(low, high)
		dst = append(dst, byte(x0), byte(x0>>8), byte(x1), byte(x1>>8))
	}
	return dst
}

// decodeLow reconstructs a lower-band sample with the full 6-bit code, then adapts as the
// encoder did, from the top four bits.
func (b *band) decodeLow(code int32) int32 {
	r := clampBand(b.signal + (b.step*qm6[code])>>15)
	b.updateLow(code)
	return r
}

func (b *band) decodeHigh(code int32) int32 {
	r := clampBand(b.signal + (b.step*qm2[code])>>15)
	b.updateHigh(code)
	return r
}

// clampBand limits a reconstructed sub-band sample to the standard's 15-bit range.
func clampBand(v int32) int32 {
	if v > 16383 {
		return 16383
	}
	if v < -16384 {
		return -16384
	}
	return v
}

// synthesize runs the synthesis QMF: the sum and difference of the two bands are
// interpolated back into two 16 kHz samples.
func (d *Decoder) synthesize(low, high int32) (int16, int16) {
	copy(d.qmfLine[:], d.qmfLine[2:])
	d.qmfLine[22], d.qmfLine[23] = low+high, low-high
	// Pairs i = 0 (newest) .. 11: qmfLine[23-2i] holds the difference, [22-2i] the sum.
	var first, second int32
	for i := 0; i < 12; i++ {
		first += qmf[2*i] * d.qmfLine[23-2*i]
		second += qmf[2*i+1] * d.qmfLine[22-2*i]
	}
	return pcm16(first >> 11), pcm16(second >> 11)
}

func pcm16(v int32) int16 {
	if v > 32767 {
		return 32767
	}
	if v < -32768 {
		return -32768
	}
	return int16(v)
}
