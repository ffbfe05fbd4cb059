package fakedeepgram_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
)

const ms = time.Millisecond

// Every utterance is recorded with how much speech and audio it had, what it answered and
// how it ended, in any encoding.
func TestUtteranceStats(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"first line", "second line"}})
	ctx := testContext(t)
	for _, tc := range []struct {
		f     audio.Format
		enc   string
		chunk int
	}{
		{audio.Telephone, "mulaw", 160},
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, "linear16", 333}, // odd: samples straddle messages
	} {
		t.Run(tc.enc, func(t *testing.T) {
			f := tc.f
			c := dial(ctx, t, base, "encoding="+tc.enc+"&sample_rate="+itoa(f.Rate)+"&interim_results=true&tag="+tc.enc, "")
			send := func(parts ...[]byte) { sendFrames(ctx, t, c, cat(parts...), tc.chunk) }
			// 1: two phrases 200 ms apart, less than EndSilence: one utterance.
			send(silence(f, 200*ms), speech(f, 400*ms), silence(f, 200*ms), speech(f, 400*ms), silence(f, 700*ms))
			// 2: a 40 ms click, too short to transcribe, ended by silence.
			send(speech(f, 40*ms), silence(f, 700*ms))
			// 3: cut short by Finalize.
			send(speech(f, 500*ms))
			sendJSON(ctx, t, c, "Finalize")
			// 4: still open at CloseStream, 100 ms into a pause.
			send(speech(f, 300*ms), silence(f, 100*ms))
			sendJSON(ctx, t, c, "CloseStream")
			readUntil(ctx, t, c, "Metadata")

			want := []fakedeepgram.UtteranceStat{
				{Start: 200 * ms, Speech: 1000 * ms, Voiced: 800 * ms, Audio: 1600 * ms, Text: "first line", Final: fakedeepgram.FinalEndpoint},
				{Start: 1900 * ms, Speech: 40 * ms, Voiced: 40 * ms, Audio: 640 * ms, Final: fakedeepgram.FinalEndpoint},
				{Start: 2640 * ms, Speech: 500 * ms, Voiced: 500 * ms, Audio: 500 * ms, Text: "second line", Final: fakedeepgram.FinalFinalize},
				{Start: 3140 * ms, Speech: 300 * ms, Voiced: 300 * ms, Audio: 400 * ms, Text: "unscripted utterance 3", Final: fakedeepgram.FinalClose},
			}
			var st fakedeepgram.ConnStats
			for _, s := range fake.Stats() {
				if s.Query.Get("tag") == tc.enc {
					st = s
				}
			}
			if diff := cmp.Diff(want, st.Utterances); diff != "" {
				t.Errorf("utterances (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"first line", "second line", "unscripted utterance 3"}, st.Transcripts); diff != "" {
				t.Errorf("transcripts (-want +got):\n%s", diff)
			}
		})
	}
}

// A pause inside speech shorter than EndSilence keeps one utterance; EndSilence splits it.
func TestPauseShorterThanEndSilenceIsOneUtterance(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{EndSilence: 400 * ms})
	ctx := testContext(t)
	f := audio.Telephone
	for _, tc := range []struct {
		gap  time.Duration
		want []string
	}{
		{380 * ms, []string{"unscripted utterance 1"}},
		{400 * ms, []string{"unscripted utterance 1", "unscripted utterance 2"}},
	} {
		tag := "gap" + itoa(int(tc.gap/ms))
		c := dial(ctx, t, base, "encoding=mulaw&sample_rate=8000&tag="+tag, "")
		sendFrames(ctx, t, c, cat(speech(f, 300*ms), silence(f, tc.gap), speech(f, 300*ms), silence(f, 500*ms)), f.FrameBytes())
		sendJSON(ctx, t, c, "CloseStream")
		var finals []string
		for _, m := range readUntil(ctx, t, c, "Metadata") {
			if m.Type == "Results" {
				finals = append(finals, m.Transcript)
			}
		}
		if diff := cmp.Diff(tc.want, finals); diff != "" {
			t.Errorf("pause of %v: finals (-want +got):\n%s", tc.gap, diff)
		}
		st := fake.Stats()[len(fake.Stats())-1]
		if len(st.Utterances) != len(tc.want) {
			t.Fatalf("pause of %v: utterances %+v", tc.gap, st.Utterances)
		}
		if u := st.Utterances[0]; len(tc.want) == 1 && (u.Speech != 600*ms+tc.gap || u.Voiced != 600*ms) {
			t.Errorf("pause of %v: utterance %+v, want the pause inside its Speech only", tc.gap, u)
		}
	}
}

// Stats describe an utterance before any message about it reaches the client, and keep an
// open one up to date.
func TestUtteranceStatsLeadTheMessages(t *testing.T) {
	fake, base := start(t, fakedeepgram.Options{Transcripts: []string{"hello"}})
	ctx := testContext(t)
	f := audio.Telephone
	c := dial(ctx, t, base, telephoneQuery+"&vad_events=true", "")

	sendFrames(ctx, t, c, cat(silence(f, 100*ms), speech(f, 20*ms)), f.FrameBytes())
	if m, err := readMsg(ctx, t, c); err != nil || m.Type != "SpeechStarted" {
		t.Fatalf("first message %+v, %v; want SpeechStarted", m, err)
	}
	want := fakedeepgram.UtteranceStat{Start: 100 * ms, Speech: 20 * ms, Voiced: 20 * ms, Audio: 20 * ms}
	if diff := cmp.Diff([]fakedeepgram.UtteranceStat{want}, fake.Stats()[0].Utterances); diff != "" {
		t.Fatalf("utterances at SpeechStarted (-want +got):\n%s", diff)
	}

	// Open: the record grows with the audio.
	sendFrames(ctx, t, c, speech(f, 480*ms), f.FrameBytes())
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool {
		return len(s[0].Utterances) == 1 && s[0].Utterances[0].Audio == 500*ms
	}); err != nil {
		t.Fatalf("%v: %+v", err, fake.Stats()[0].Utterances)
	}
	sendFrames(ctx, t, c, silence(f, 600*ms), f.FrameBytes())
	got := readUntil(ctx, t, c, "Results") // the interim
	if got[len(got)-1].IsFinal {
		t.Fatalf("first result %+v, want an interim", got[len(got)-1])
	}
	m := readUntil(ctx, t, c, "Results")[0]
	if !m.SpeechFinal || m.Transcript != "hello" {
		t.Fatalf("second result %+v, want the speech_final", m)
	}
	want = fakedeepgram.UtteranceStat{Start: 100 * ms, Speech: 500 * ms, Voiced: 500 * ms, Audio: 1100 * ms, Text: "hello", Final: fakedeepgram.FinalEndpoint}
	if diff := cmp.Diff([]fakedeepgram.UtteranceStat{want}, fake.Stats()[0].Utterances); diff != "" {
		t.Fatalf("utterances at the final (-want +got):\n%s", diff)
	}

	// An utterance the connection loses stays open for good.
	sendFrames(ctx, t, c, speech(f, 200*ms), f.FrameBytes())
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool {
		return len(s[0].Utterances) == 2 && s[0].Utterances[1].Speech == 200*ms
	}); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseNow()
	if err := fake.WaitFor(ctx, func(s []fakedeepgram.ConnStats) bool { return s[0].Closed }); err != nil {
		t.Fatal(err)
	}
	if u := fake.Stats()[0].Utterances[1]; u.Final != "" || u.Text != "" || u.Start != 1200*ms {
		t.Fatalf("lost utterance %+v, want it open, at 1.2 s", u)
	}
}
