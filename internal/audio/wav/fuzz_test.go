package wav

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRead checks that Read never panics and that whatever it accepts is well formed and
// survives a Write/Read round trip. Seeds live in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add(riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}, chunk{id: "data", body: pcmBytes(1, -1)}))
	f.Fuzz(func(t *testing.T, file []byte) {
		format, data, err := Read(bytes.NewReader(file))
		if err != nil && !errors.Is(err, ErrTruncated) {
			if data != nil {
				t.Fatalf("error %v with %d bytes of data", err, len(data))
			}
			return
		}
		if format.Rate <= 0 || format.Encoding.BytesPerSample() == 0 {
			t.Fatalf("accepted format %v", format)
		}
		if len(data)%format.Encoding.BytesPerSample() != 0 {
			t.Fatalf("%d bytes of %v is not whole samples", len(data), format)
		}
		if len(data) > len(file) {
			t.Fatalf("%d bytes of audio from a %d-byte file", len(data), len(file))
		}
		var buf bytes.Buffer
		if err := Write(&buf, format, data); err != nil {
			t.Fatalf("Write of what Read accepted: %v", err)
		}
		f2, d2, err := Read(&buf)
		if err != nil || f2 != format || !bytes.Equal(d2, data) {
			t.Fatalf("round trip: %v %v, %d vs %d bytes", err, f2, len(d2), len(data))
		}
	})
}
