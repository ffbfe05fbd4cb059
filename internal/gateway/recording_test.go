package gateway

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/recording"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

const testNotice = "This call is recorded."

// TestARecordedCall: with HANDSET_RECORD on, a phone call leaves recording.wav in its
// folder, the notice said before the greeting; the caller's words are on the left channel
// and the agent's speech on the right, where the journal puts them.
func TestARecordedCall(t *testing.T) {
	cfg := fakesConfig(t, "HANDSET_RECORD=true", "HANDSET_RECORD_NOTICE="+testNotice)
	base := serve(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	phone, err := twiliocaller.Dial(ctx, twiliocaller.Options{BaseURL: base, AuthToken: testTwilioToken, InsecureStreamURL: true})
	if err != nil {
		t.Fatal(err)
	}
	played := func(mark string) func(twiliocaller.Snapshot) bool {
		return func(s twiliocaller.Snapshot) bool {
			for _, m := range s.Marks() {
				if m.Name == mark && m.Echoed {
					return true
				}
			}
			return s.Ended
		}
	}
	if err := phone.WaitFor(ctx, played("t0-end")); err != nil {
		t.Fatalf("the greeting never played: %v", err)
	}
	if err := phone.SayAndWait(ctx, audiotest.Mulaw(audiotest.SpeechLike(8000, time.Second, 7))); err != nil {
		t.Fatal(err)
	}
	if err := phone.WaitFor(ctx, played("t1-end")); err != nil {
		t.Fatalf("the reply never played: %v", err)
	}
	_ = phone.Hangup()
	<-phone.Done()

	folders, _ := filepath.Glob(filepath.Join(cfg.DataDir, "calls", "*"))
	if len(folders) != 1 {
		t.Fatalf("call folders %v, want one", folders)
	}
	evs := waitJournal(t, filepath.Join(folders[0], "events.jsonl"), obs.CallEnd)
	first := func(typ string, turn int) obs.Event {
		for _, e := range evs {
			if e.Type == typ && e.Turn == turn {
				return e
			}
		}
		t.Fatalf("no %s of turn %d in the journal", typ, turn)
		return obs.Event{}
	}
	start, stop := first(obs.RecordingStart, 0), first(obs.RecordingStop, 0)
	if say := first(obs.TTSRequest, 0); say.Text != testNotice || say.Kind != "notice" {
		t.Errorf("first thing said: %q (%s), want the notice", say.Text, say.Kind)
	}
	caller, agent := readChannels(t, filepath.Join(folders[0], recording.FileName))
	if got := time.Duration(len(caller)) * time.Second / 8000; got.Milliseconds() != stop.AudioMS {
		t.Errorf("recording.stop says %d ms, the file holds %v", stop.AudioMS, got)
	}
	at := func(e obs.Event) time.Duration { return e.TS.Sub(start.TS) }

	// The notice, then the greeting, on the agent's channel; the caller silent meanwhile.
	greeting := at(first(obs.PlayoutFirstAudio, 0))
	if !loudIn(agent, greeting, greeting+300*time.Millisecond) || loudIn(caller, greeting, greeting+300*time.Millisecond) {
		t.Errorf("at %v (the notice's first audio) want the agent heard and the caller silent", greeting)
	}
	// The caller's words where the VAD heard them, the agent silent then.
	spoke := at(first(obs.VADSpeechStart, 0))
	if !loudIn(caller, spoke-100*time.Millisecond, spoke+300*time.Millisecond) {
		t.Errorf("no caller audio around %v, where the VAD heard speech start", spoke)
	}
	if loudIn(agent, spoke, spoke+500*time.Millisecond) {
		t.Errorf("agent audio at %v, while the caller spoke", spoke)
	}
	// The reply where the journal says its first audio went out.
	reply := at(first(obs.PlayoutFirstAudio, 1))
	if loudIn(agent, reply-400*time.Millisecond, reply-100*time.Millisecond) || !loudIn(agent, reply, reply+300*time.Millisecond) {
		t.Errorf("the agent's reply is not on its channel at %v", reply)
	}
}

// waitJournal reads the journal at path once it holds an event of typ (the call ends a
// little after the caller hangs up).
func waitJournal(t *testing.T, path, typ string) []obs.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := obs.ReadFile(path)
		for _, e := range evs {
			if e.Type == typ {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the journal (%v)", typ, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readChannels reads a two-channel PCM16 recording's channels.
func readChannels(t *testing.T, path string) (left, right []int16) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 44 || string(b[:4]) != "RIFF" || binary.LittleEndian.Uint16(b[22:]) != 2 {
		t.Fatalf("%s is not a two-channel WAVE file", path)
	}
	for i := 44; i+4 <= len(b); i += 4 {
		left = append(left, int16(binary.LittleEndian.Uint16(b[i:])))
		right = append(right, int16(binary.LittleEndian.Uint16(b[i+2:])))
	}
	return left, right
}

// loudIn reports whether some 20 ms of pcm (8 kHz) within [from, to) is audible.
func loudIn(pcm []int16, from, to time.Duration) bool {
	for s := max(0, int(from*8000/time.Second)); s+160 <= min(len(pcm), int(to*8000/time.Second)); s += 160 {
		if audiotest.RMSDBFS(pcm[s:s+160]) > -40 {
			return true
		}
	}
	return false
}

// TestOldRecordingsAreDeleted: a node sweeps its own data dir as it starts (and hourly):
// recordings past HANDSET_RECORD_RETENTION go, newer ones and journals stay.
func TestOldRecordingsAreDeleted(t *testing.T) {
	cfg := fakesConfig(t, "HANDSET_RECORD=true", "HANDSET_RECORD_RETENTION=24h")
	old, fresh := filepath.Join(cfg.DataDir, "calls", "old"), filepath.Join(cfg.DataDir, "calls", "fresh")
	for _, dir := range []string{old, fresh} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{recording.FileName, "events.jsonl"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	long := time.Now().Add(-25 * time.Hour)
	for _, name := range []string{recording.FileName, "events.jsonl"} {
		_ = os.Chtimes(filepath.Join(old, name), long, long)
	}
	serve(t, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(old, recording.FileName)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old recording was not deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, kept := range []string{filepath.Join(fresh, recording.FileName), filepath.Join(old, "events.jsonl")} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s: %v, want it kept", kept, err)
		}
	}
}
