package recording

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
)

// MaxBuckets bounds a waveform's resolution: enough for any screen, small to send.
const MaxBuckets = 4000

// Waveform is a recording's shape for drawing: its length and, per bucket of equal time,
// each channel's peak level from 0 (silence) to 1 (full scale).
type Waveform struct {
	Duration time.Duration
	Caller   []float32
	Agent    []float32
}

// Recordings finds the recordings of the calls in a data directory.
type Recordings struct{ DataDir string }

// PathOf is where the recording of call id lives, or an error for an id that is not a
// plain folder name.
func PathOf(dataDir, id string) (string, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || filepath.Base(id) != id {
		return "", fmt.Errorf("recording: %q is not a call id", id)
	}
	return filepath.Join(obs.Dir(dataDir, id), FileName), nil
}

// Open opens call's recording for playback, with its last change; an error wrapping
// os.ErrNotExist when the call has none (not recorded, deleted, or on another node).
func (rs Recordings) Open(c store.Call) (io.ReadSeekCloser, time.Time, error) {
	path, err := PathOf(rs.DataDir, string(c.ID))
	if err != nil {
		return nil, time.Time{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, time.Time{}, err
	}
	return f, st.ModTime(), nil
}

// Waveform reads call's recording into buckets peaks per channel (see ReadWaveform).
func (rs Recordings) Waveform(c store.Call, buckets int) (Waveform, error) {
	path, err := PathOf(rs.DataDir, string(c.ID))
	if err != nil {
		return Waveform{}, err
	}
	return ReadWaveform(path, buckets)
}

// ReadWaveform streams the recording at path (never holding it whole) into buckets peaks
// per channel. A file cut short by a crash is read as far as it goes.
func ReadWaveform(path string, buckets int) (Waveform, error) {
	if buckets < 1 || buckets > MaxBuckets {
		return Waveform{}, fmt.Errorf("recording: %d buckets: ask for 1 to %d", buckets, MaxBuckets)
	}
	f, err := os.Open(path)
	if err != nil {
		return Waveform{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Waveform{}, err
	}
	rate, err := readHeader(f)
	if err != nil {
		return Waveform{}, fmt.Errorf("recording: %s: %w", path, err)
	}
	// The file's own length, not the header's: the header lags a crash by one flush.
	frames := (st.Size() - headerSize) / 4
	w := Waveform{
		Duration: time.Duration(frames) * time.Second / time.Duration(rate),
		Caller:   make([]float32, buckets), Agent: make([]float32, buckets),
	}
	if frames <= 0 {
		return w, nil
	}
	// Read in blocks; the peak of a bucket is kept as a sample value, scaled once at the end.
	buf := make([]byte, 64<<10)
	callerPeak, agentPeak := make([]int32, buckets), make([]int32, buckets)
	for i := int64(0); i < frames; {
		block := buf[:4*min(frames-i, int64(len(buf)/4))]
		if _, err := io.ReadFull(f, block); err != nil {
			return Waveform{}, fmt.Errorf("recording: %s: %w", path, err)
		}
		for k := 0; k < len(block); k, i = k+4, i+1 {
			b := i * int64(buckets) / frames
			callerPeak[b] = max(callerPeak[b], magnitude(block[k:]))
			agentPeak[b] = max(agentPeak[b], magnitude(block[k+2:]))
		}
	}
	for b := range buckets {
		w.Caller[b], w.Agent[b] = min(float32(callerPeak[b])/32768, 1), min(float32(agentPeak[b])/32768, 1)
	}
	return w, nil
}

// magnitude is the absolute value of the little-endian sample at b.
func magnitude(b []byte) int32 {
	v := int32(int16(binary.LittleEndian.Uint16(b)))
	if v < 0 {
		v = -v
	}
	return v
}

// readHeader checks that r starts with the header this package writes (two-channel PCM16)
// and returns its rate.
func readHeader(r io.Reader) (int, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, errors.New("not a recording: too short")
	}
	le := binary.LittleEndian
	switch {
	case string(h[0:4]) != "RIFF" || string(h[8:16]) != "WAVEfmt " || string(h[36:40]) != "data":
		return 0, errors.New("not a recording: not the WAVE layout Handset writes")
	case le.Uint32(h[16:]) != 16 || le.Uint16(h[20:]) != 1 || le.Uint16(h[22:]) != 2 || le.Uint16(h[34:]) != 16:
		return 0, errors.New("not a recording: not two-channel 16-bit PCM")
	}
	rate := int(le.Uint32(h[24:]))
	if rate <= 0 || rate > 192000 {
		return 0, fmt.Errorf("not a recording: sample rate %d Hz", rate)
	}
	return rate, nil
}
