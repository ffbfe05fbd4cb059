package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
)

// chunk is one RIFF chunk for building test files; size overrides len(body) when set.
type chunk struct {
	id   string
	body []byte
	size *uint32
}

func u32(v uint32) *uint32 { return &v }

// riff builds a RIFF file of the given form type from chunks, padding odd bodies.
func riff(form string, chunks ...chunk) []byte {
	var b bytes.Buffer
	for _, c := range chunks {
		b.WriteString(c.id)
		size := uint32(len(c.body))
		if c.size != nil {
			size = *c.size
		}
		b.Write(binary.LittleEndian.AppendUint32(nil, size))
		b.Write(c.body)
		if len(c.body)%2 == 1 && c.size == nil {
			b.WriteByte(0)
		}
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+b.Len()))...)
	return append(append(out, form...), b.Bytes()...)
}

// fmtBody is a plain fmt chunk body (16 bytes).
func fmtBody(tag uint16, channels, rate, bits int) []byte {
	b := binary.LittleEndian.AppendUint16(nil, tag)
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*channels*bits/8))
	b = binary.LittleEndian.AppendUint16(b, uint16(channels*bits/8))
	return binary.LittleEndian.AppendUint16(b, uint16(bits))
}

// extBody is a WAVE_FORMAT_EXTENSIBLE fmt chunk body (40 bytes) wrapping subTag.
func extBody(subTag uint16, channels, rate, bits int) []byte {
	b := fmtBody(tagExtensible, channels, rate, bits)
	b = binary.LittleEndian.AppendUint16(b, 22)           // cbSize
	b = binary.LittleEndian.AppendUint16(b, uint16(bits)) // valid bits
	b = binary.LittleEndian.AppendUint32(b, 0x4)          // channel mask: front centre
	b = binary.LittleEndian.AppendUint16(b, subTag)
	return append(b, ksGUIDTail...)
}

func pcmBytes(samples ...int16) []byte {
	var b []byte
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		f    audio.Format
		data []byte
	}{
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, pcmBytes(0, 1, -1, 32767, -32768, 1234)},
		{audio.Format{Encoding: audio.PCM16, Rate: 48000}, nil},
		{audio.Telephone, []byte{0xff, 0x00, 0x80, 0x7f, 0x12}}, // odd: needs a pad byte
		{audio.Format{Encoding: audio.Alaw, Rate: 8000}, []byte{0xd5, 0x55, 0xaa, 0x2a}},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := Write(&buf, c.f, c.data); err != nil {
			t.Fatalf("%v: Write: %v", c.f, err)
		}
		if buf.Len()%2 != 0 {
			t.Errorf("%v: file of odd length %d (missing pad byte)", c.f, buf.Len())
		}
		if got := binary.LittleEndian.Uint32(buf.Bytes()[4:8]); int(got) != buf.Len()-8 {
			t.Errorf("%v: RIFF size %d, file %d bytes", c.f, got, buf.Len())
		}
		f, data, err := Read(&buf)
		if err != nil {
			t.Fatalf("%v: Read: %v", c.f, err)
		}
		if f != c.f || !bytes.Equal(data, c.data) {
			t.Errorf("%v: read back %v %x, want %x", c.f, f, data, c.data)
		}
	}
}

func TestWritePCMHeaderIsCanonical(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, audio.Format{Encoding: audio.PCM16, Rate: 8000}, pcmBytes(1, 2)); err != nil {
		t.Fatal(err)
	}
	want := riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}, chunk{id: "data", body: pcmBytes(1, 2)})
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("header\n% x\nwant\n% x", buf.Bytes(), want)
	}
}

func TestWriteErrors(t *testing.T) {
	for _, c := range []struct {
		f    audio.Format
		data []byte
		want string
	}{
		{audio.Format{Encoding: audio.PCM16, Rate: 8000}, []byte{1, 2, 3}, "3 bytes"},
		{audio.Format{Encoding: audio.PCM16, Rate: 0}, nil, "rate 0"},
		{audio.Format{Encoding: 9, Rate: 8000}, nil, "encoding(9)"},
	} {
		if err := Write(&bytes.Buffer{}, c.f, c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%v, %d bytes) error = %v, want one mentioning %q", c.f, len(c.data), err, c.want)
		}
	}
}

func TestReadVariants(t *testing.T) {
	mono := pcmBytes(100, -200, 300)
	cases := []struct {
		name string
		file []byte
		want audio.Format
		data []byte
	}{
		{"extensible PCM", riff("WAVE", chunk{id: "fmt ", body: extBody(tagPCM, 1, 16000, 16)}, chunk{id: "data", body: mono}),
			audio.Format{Encoding: audio.PCM16, Rate: 16000}, mono},
		{"extensible mu-law", riff("WAVE", chunk{id: "fmt ", body: extBody(tagMulaw, 1, 8000, 8)}, chunk{id: "data", body: []byte{1, 2, 3}}),
			audio.Telephone, []byte{1, 2, 3}},
		{"A-law with cbSize and fact", riff("WAVE", chunk{id: "fmt ", body: append(fmtBody(tagAlaw, 1, 8000, 8), 0, 0)},
			chunk{id: "fact", body: []byte{2, 0, 0, 0}}, chunk{id: "data", body: []byte{0xd5, 0x55}}),
			audio.Format{Encoding: audio.Alaw, Rate: 8000}, []byte{0xd5, 0x55}},
		{"stereo downmix", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 2, 8000, 16)},
			chunk{id: "data", body: pcmBytes(100, 300, -32768, -32768, 32767, -32768, 7, 8)}),
			audio.Format{Encoding: audio.PCM16, Rate: 8000}, pcmBytes(200, -32768, -1, 7)},
		{"odd LIST chunk skipped", riff("WAVE", chunk{id: "LIST", body: []byte("INFOabc")}, chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 24000, 16)},
			chunk{id: "junk", body: []byte{1}}, chunk{id: "data", body: mono}, chunk{id: "LIST", body: []byte("after")}),
			audio.Format{Encoding: audio.PCM16, Rate: 24000}, mono},
		{"data size 0 means to end", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}, chunk{id: "data", body: mono, size: u32(0)}),
			audio.Format{Encoding: audio.PCM16, Rate: 8000}, mono},
		{"data size FFFFFFFF means to end", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagMulaw, 1, 8000, 8)}, chunk{id: "data", body: []byte{9, 8, 7}, size: u32(0xFFFFFFFF)}),
			audio.Telephone, []byte{9, 8, 7}},
		{"partial trailing sample dropped", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}, chunk{id: "data", body: append(pcmBytes(5), 9), size: u32(0)}),
			audio.Format{Encoding: audio.PCM16, Rate: 8000}, pcmBytes(5)},
	}
	for _, c := range cases {
		f, data, err := Read(bytes.NewReader(c.file))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if f != c.want || !bytes.Equal(data, c.data) {
			t.Errorf("%s: got %v % x, want %v % x", c.name, f, data, c.want, c.data)
		}
	}
}

func TestReadTruncatedDataKeepsWhatIsThere(t *testing.T) {
	file := riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}, chunk{id: "data", body: pcmBytes(1, 2, 3), size: u32(100)})
	file = append(file, 0x44) // half a sample more
	f, data, err := Read(bytes.NewReader(file))
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "7 of 100") {
		t.Fatalf("err = %v, want ErrTruncated naming 7 of 100 bytes", err)
	}
	if f.Encoding != audio.PCM16 || !bytes.Equal(data, pcmBytes(1, 2, 3)) {
		t.Errorf("got %v % x, want the three whole samples", f, data)
	}
}

func TestReadErrors(t *testing.T) {
	pcmFmt := chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 16)}
	data := chunk{id: "data", body: pcmBytes(1)}
	badGUID := extBody(tagPCM, 1, 8000, 16)
	badGUID[30] ^= 0xff
	cases := []struct {
		name string
		file []byte
		is   error
		says string
	}{
		{"empty", nil, ErrNotRIFF, "0 bytes"},
		{"RIFX", append([]byte("RIFX"), riff("WAVE", pcmFmt, data)[4:]...), ErrNotRIFF, `"RIFX"`},
		{"AVI", riff("AVI ", pcmFmt, data), ErrNotWAVE, `"AVI "`},
		{"no fmt", riff("WAVE", data), ErrNoFormat, ""},
		{"nothing after header", riff("WAVE"), ErrNoFormat, ""},
		{"no data", riff("WAVE", pcmFmt, chunk{id: "LIST", body: []byte("xx")}), ErrNoData, ""},
		{"chunk cut short", riff("WAVE", pcmFmt, chunk{id: "LIST", body: []byte("xx"), size: u32(1000)}), ErrNoData, `"LIST"`},
		{"float", riff("WAVE", chunk{id: "fmt ", body: fmtBody(3, 1, 8000, 32)}, data), ErrUnsupported, "0x0003"},
		{"8-bit PCM", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 8000, 8)}, data), ErrUnsupported, "8 bits"},
		{"24-bit extensible", riff("WAVE", chunk{id: "fmt ", body: extBody(tagPCM, 1, 8000, 24)}, data), ErrUnsupported, "24 bits"},
		{"5.1 PCM", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 6, 8000, 16)}, data), ErrUnsupported, "6 channels"},
		{"stereo mu-law", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagMulaw, 2, 8000, 8)}, data), ErrUnsupported, "2 channels"},
		{"bad GUID", riff("WAVE", chunk{id: "fmt ", body: badGUID}, data), ErrUnsupported, "GUID"},
		{"short extensible", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagExtensible, 1, 8000, 16)}, data), ErrBadFormat, "EXTENSIBLE"},
		{"short fmt", riff("WAVE", chunk{id: "fmt ", body: []byte{1, 0, 1, 0}}, data), ErrBadFormat, "4 bytes"},
		{"rate 0", riff("WAVE", chunk{id: "fmt ", body: fmtBody(tagPCM, 1, 0, 16)}, data), ErrBadFormat, "rate 0"},
	}
	for _, c := range cases {
		_, _, err := Read(bytes.NewReader(c.file))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: err = %v, want %v mentioning %q", c.name, err, c.is, c.says)
		}
	}
}

func TestFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.wav")
	f := audio.Format{Encoding: audio.PCM16, Rate: 16000}
	if err := WriteFile(path, f, pcmBytes(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	gf, data, err := ReadFile(path)
	if err != nil || gf != f || !bytes.Equal(data, pcmBytes(1, 2, 3)) {
		t.Errorf("ReadFile = %v % x %v", gf, data, err)
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if err := os.WriteFile(path, []byte("not a wav file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(path); !errors.Is(err, ErrNotRIFF) || !strings.Contains(err.Error(), path) {
		t.Errorf("bad file: err = %v, want ErrNotRIFF naming the path", err)
	}
}
