package g722

import "testing"

// FuzzDecode: every byte string is G.722; decoding never panics and yields exactly four
// PCM bytes per code byte, however the stream is cut.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte{0xfa, 0xfa, 0xfa, 0xfa}, 2)
	f.Add([]byte{0x00, 0xff, 0x00, 0xff, 0x3f, 0xc0, 0x80, 0x7f}, 3)
	f.Fuzz(func(t *testing.T, code []byte, cut int) {
		if len(code) > 1<<16 {
			return
		}
		d := NewDecoder()
		cut = min(max(cut, 0), len(code))
		out := d.Decode(nil, code[:cut])
		out = d.Decode(out, code[cut:])
		if len(out) != 4*len(code) {
			t.Fatalf("%d code bytes decoded to %d PCM bytes", len(code), len(out))
		}
		whole := NewDecoder().Decode(nil, code)
		if string(whole) != string(out) {
			t.Fatal("decoding in two cuts differs from decoding at once")
		}
	})
}
