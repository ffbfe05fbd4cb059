package g722

// band is one sub-band's ADPCM state: the adaptive step size (kept as a log-scale factor
// and its linear value) and the pole-zero predictor (two poles on the reconstructed
// signal, six zeros on the quantized differences).
type band struct {
	signal    int32 // s: the prediction of the next sample
	zeroPart  int32 // sz: the six-zero part of the prediction
	logScale  int32 // nb: log-domain step size
	step      int32 // det: linear step size
	recon     [3]int32
	partial   [3]int32 // p: zero-part prediction plus difference, for pole adaptation
	pole      [3]int32 // a[1], a[2]
	zero      [7]int32 // b[1..6]
	diffs     [7]int32 // d[0..6]
	poleNext  [3]int32
	zeroNext  [7]int32
	logLimit  int32 // highest log scale factor of the band
	scaleBias int32 // shift that maps the band's log scale to its step
}

// saturate clamps to the 16-bit range the standard's arithmetic works in.
func saturate(v int32) int32 {
	if v > 32767 {
		return 32767
	}
	if v < -32768 {
		return -32768
	}
	return v
}

func (b *band) reset(logLimit, scaleBias, step int32) {
	*b = band{logLimit: logLimit, scaleBias: scaleBias, step: step}
}

// adaptScale updates the log-scale factor with leakage (·127/128) plus a multiplier
// chosen by the code's magnitude, then converts it to the linear step size.
func (b *band) adaptScale(factor int32) {
	nb := (b.logScale*127)>>7 + factor
	if nb < 0 {
		nb = 0
	} else if nb > b.logLimit {
		nb = b.logLimit
	}
	b.logScale = nb
	mantissa := ilb[(nb>>6)&31]
	shift := b.scaleBias - nb>>11
	if shift < 0 {
		mantissa <<= -shift
	} else {
		mantissa >>= shift
	}
	b.step = mantissa << 2
}

// adaptPredictor takes the quantized difference d of this sample, reconstructs the
// signal, adapts the pole and zero coefficients by sign correlations and computes the
// prediction for the next sample.
func (b *band) adaptPredictor(d int32) {
	b.diffs[0] = d
	b.recon[0] = saturate(b.signal + d)
	b.partial[0] = saturate(b.zeroPart + d)

	// Second pole: leak towards zero, nudge by the sign agreement of p now and two
	// samples ago, and against the first pole's contribution.
	s0, s1, s2 := b.partial[0]>>15, b.partial[1]>>15, b.partial[2]>>15
	f := saturate(b.pole[1] << 2)
	if s0 == s1 {
		f = -f
	}
	if f > 32767 {
		f = 32767
	}
	a2 := int32(-128)
	if s0 == s2 {
		a2 = 128
	}
	a2 += f >> 7
	a2 += (b.pole[2] * 32512) >> 15
	if a2 > 12288 {
		a2 = 12288
	} else if a2 < -12288 {
		a2 = -12288
	}
	b.poleNext[2] = a2

	// First pole: leak and sign agreement of p now and one sample ago, bounded so the
	// two-pole section stays stable.
	a1 := int32(-192)
	if s0 == s1 {
		a1 = 192
	}
	a1 = saturate(a1 + (b.pole[1]*32640)>>15)
	limit := saturate(15360 - a2)
	if a1 > limit {
		a1 = limit
	} else if a1 < -limit {
		a1 = -limit
	}
	b.poleNext[1] = a1

	// Zeros: leak, nudged by the sign agreement of this difference with each past one.
	var step int32
	if d != 0 {
		step = 128
	}
	sd := d >> 15
	for i := 1; i < 7; i++ {
		nudge := -step
		if b.diffs[i]>>15 == sd {
			nudge = step
		}
		b.zeroNext[i] = saturate(nudge + (b.zero[i]*32640)>>15)
	}

	// Shift the delay lines.
	for i := 6; i > 0; i-- {
		b.diffs[i] = b.diffs[i-1]
		b.zero[i] = b.zeroNext[i]
	}
	for i := 2; i > 0; i-- {
		b.recon[i] = b.recon[i-1]
		b.partial[i] = b.partial[i-1]
		b.pole[i] = b.poleNext[i]
	}

	// Prediction for the next sample: poles on the reconstructed signal, zeros on the
	// differences.
	poles := saturate((b.pole[1]*saturate(b.recon[1]+b.recon[1]))>>15 +
		(b.pole[2]*saturate(b.recon[2]+b.recon[2]))>>15)
	var zeros int32
	for i := 6; i > 0; i-- {
		zeros += (b.zero[i] * saturate(b.diffs[i]+b.diffs[i])) >> 15
	}
	b.zeroPart = saturate(zeros)
	b.signal = saturate(poles + b.zeroPart)
}

// Band limits: the lower band's log scale stops at 18432 and its step starts at 32; the
// higher band's at 22528 and 8.
const (
	lowLogLimit   = 18432
	lowScaleBias  = 8
	lowStartStep  = 32
	highLogLimit  = 22528
	highScaleBias = 10
	highStartStep = 8
)

func (b *band) resetLow()  { b.reset(lowLogLimit, lowScaleBias, lowStartStep) }
func (b *band) resetHigh() { b.reset(highLogLimit, highScaleBias, highStartStep) }
