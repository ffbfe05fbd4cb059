// Package g711 implements the ITU-T G.711 mu-law and A-law companding codecs used by every
// telephone carrier. Decoding is a table lookup; encoding follows the G.711 segment
// algorithm (mu-law with bias 0x84 and clip at 32635). All functions work into caller
// buffers and never allocate.
package g711

// mulawTable and alawTable hold the decoded value of every code byte, filled once by init.
var (
	mulawTable [256]int16
	alawTable  [256]int16
)

func init() {
	for i := range 256 {
		mulawTable[i] = decodeMulaw(byte(i))
		alawTable[i] = decodeAlaw(byte(i))
	}
}

const (
	mulawBias = 0x84
	mulawClip = 32635
)

func decodeMulaw(u byte) int16 {
	u = ^u
	t := (int32(u&0x0f) << 3) + mulawBias
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return int16(mulawBias - t)
	}
	return int16(t - mulawBias)
}

func decodeAlaw(a byte) int16 {
	a ^= 0x55
	t := int32(a&0x0f) << 4
	seg := (a & 0x70) >> 4
	switch seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}

// EncodeMulawSample compresses one linear sample to mu-law.
func EncodeMulawSample(s int16) byte {
	v := int32(s)
	sign := byte(0)
	if v < 0 {
		v = -v
		sign = 0x80
	}
	if v > mulawClip {
		v = mulawClip
	}
	v += mulawBias
	exp := byte(7)
	for mask := int32(0x4000); v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	man := byte(v>>(exp+3)) & 0x0f
	return ^(sign | exp<<4 | man)
}

// EncodeAlawSample compresses one linear sample to A-law.
func EncodeAlawSample(s int16) byte {
	v := int32(s) >> 3 // A-law works on 13-bit magnitudes
	mask := byte(0xd5) // sign bit set (positive) with the even-bit inversion
	if v < 0 {
		v = -v - 1
		mask = 0x55
	}
	if v > 0xfff {
		v = 0xfff
	}
	var code byte
	switch {
	case v < 32:
		code = byte(v >> 1)
	default:
		seg := byte(1)
		for t := v >> 6; t > 0; t >>= 1 {
			seg++
		}
		code = seg<<4 | byte(v>>seg)&0x0f
	}
	return code ^ mask
}

// DecodeMulawSample expands one mu-law byte.
func DecodeMulawSample(u byte) int16 { return mulawTable[u] }

// DecodeAlawSample expands one A-law byte.
func DecodeAlawSample(a byte) int16 { return alawTable[a] }

// DecodeMulaw expands src into dst and returns dst[:len(src)]. dst must hold len(src) samples.
func DecodeMulaw(dst []int16, src []byte) []int16 {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = mulawTable[b]
	}
	return dst
}

// DecodeAlaw expands src into dst and returns dst[:len(src)].
func DecodeAlaw(dst []int16, src []byte) []int16 {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = alawTable[b]
	}
	return dst
}

// EncodeMulaw compresses src into dst and returns dst[:len(src)].
func EncodeMulaw(dst []byte, src []int16) []byte {
	dst = dst[:len(src)]
	for i, s := range src {
		dst[i] = EncodeMulawSample(s)
	}
	return dst
}

// EncodeAlaw compresses src into dst and returns dst[:len(src)].
func EncodeAlaw(dst []byte, src []int16) []byte {
	dst = dst[:len(src)]
	for i, s := range src {
		dst[i] = EncodeAlawSample(s)
	}
	return dst
}

// MulawSilence is the mu-law code for a zero sample.
const MulawSilence byte = 0xff

// AlawSilence is the A-law code for a (near) zero sample.
const AlawSilence byte = 0xd5
