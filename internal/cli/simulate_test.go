package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// callerWAV writes pcm (8 kHz) as a phone-format WAV file and returns its path.
func callerWAV(t *testing.T, pcm []int16) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "caller.wav")
	if err := wav.WriteFile(path, audio.Telephone, audiotest.Mulaw(pcm)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimulateAudio: with a configured STT, the caller's file is heard, through each
// carrier's fake, its turn answered and reported; simulate waits for the reply rather than
// hanging up after the file.
func TestSimulateAudio(t *testing.T) { forEachCarrier(t, testSimulateAudio) }

func testSimulateAudio(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "a 4 s caller file heard in real time")
	_, env := withFakes(t, []string{"what are your opening hours"}, "HANDSET_VAD=energy")
	file := callerWAV(t, audiotest.SpeechLike(8000, 4*time.Second, 7)) // longer than the old 3 s wait
	code, out := runCmd(t, env, "simulate", "--carrier", kit.Name(), "--audio", file, "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep simulateReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rep.Turns) != 1 || rep.Turns[0].Caller != "what are your opening hours" || rep.Turns[0].Reply == "" || rep.STT != "deepgram" {
		t.Errorf("report %+v, want one answered turn heard by deepgram", rep)
	}
	events, err := obs.ReadFile(rep.Journal)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].Type != obs.CallStart || events[0].Carrier != kit.Name() {
		t.Errorf("the simulated call's journal does not start with a call through %s:\n%s", kit.Name(), dumpEvents(events))
	}
}

// TestSimulateAudioNotRecognised: a file in which the STT hears nothing fails the command,
// saying so, instead of reporting a call with no turns as if all went well.
func TestSimulateAudioNotRecognised(t *testing.T) {
	testpeer.Slow(t, "a caller file heard in real time")
	_, env := withFakes(t, nil, "HANDSET_VAD=energy")
	file := callerWAV(t, audiotest.Silence(8000, time.Second))
	code, out := runCmd(t, env, "simulate", "--audio", file)
	if code != 1 || !strings.Contains(out, "was not recognised: the STT (deepgram) heard no caller turn") || !strings.Contains(out, "fix:") {
		t.Errorf("exit %d, want 1 saying the audio was not recognised:\n%s", code, out)
	}
}

// TestSimulateAudioWithoutSTT: with HANDSET_STT unset and no offline recogniser to fall
// back on, simulate refuses before the call, saying why and what to set, instead of
// playing the file to a recogniser that cannot hear it.
func TestSimulateAudioWithoutSTT(t *testing.T) {
	_, env := withFakes(t, nil, "HANDSET_STT=", "HANDSET_SPHINX_MODEL="+filepath.Join(t.TempDir(), "no-model"))
	file := callerWAV(t, audiotest.SpeechLike(8000, time.Second, 3))
	code, out := runCmd(t, env, "simulate", "--audio", file)
	for _, want := range []string{"HANDSET_STT is not set", "sphinx: ", "HANDSET_STT=deepgram"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "call c_") {
		t.Errorf("a call was simulated:\n%s", out)
	}
}

// TestSimulateReportsTheFillerAndTheReply: a slow turn hears the long-turn filler first;
// simulate reports when the filler started and, as the turn's latency, when the reply did.
func TestSimulateReportsTheFillerAndTheReply(t *testing.T) {
	testpeer.Slow(t, "a slow turn in real time")
	_, env := withFakes(t, nil, "HANDSET_LONG_TURN_MESSAGE=One moment.", "HANDSET_LONG_TURN_AFTER=200ms")
	code, out := runCmd(t, env, "simulate", "--say", "SLOW tell me about the menu", "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep simulateReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rep.Turns) != 1 {
		t.Fatalf("report %+v, want one turn", rep)
	}
	if tr := rep.Turns[0]; tr.FillerMS < 0 || tr.ResponseMS <= tr.FillerMS {
		t.Errorf("filler_ms %v, response_ms %v: want the reply's first audio after the filler's", tr.FillerMS, tr.ResponseMS)
	}
	var text strings.Builder
	rep.print(&text)
	if !strings.Contains(text.String(), "to the long-turn filler's first audio") || !strings.Contains(text.String(), "to the reply's first audio") {
		t.Errorf("simulate's report does not say both:\n%s", text.String())
	}
}
