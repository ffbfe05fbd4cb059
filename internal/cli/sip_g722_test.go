//go:build embedded

package cli

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A real SIP phone (baresip) that offers only G.722 calls Handset, which allows G722: the
// call runs wideband both ways through baresip's own G.722 codec (an implementation
// independent of Handset's). The question baresip plays at 16 kHz reaches the agent, and
// baresip records the greeting and the answer at G.722's 16 kHz, where PocketSphinx hears
// them.
func TestBaresipCallsHandsetInG722(t *testing.T) {
	testpeer.Slow(t, "a real-time G.722 call between baresip and handset serve")
	r, trunk := startServeSIP(t, nil, "HANDSET_SIP_CODECS=G722,PCMU,PCMA", "HANDSET_STT=sphinx", "HANDSET_TTS=flite",
		"HANDSET_SPHINX_DECODERS=1", "HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t),
		"HANDSET_FIRST_MESSAGE=Hello, how can I help you today?")
	source := writeBaresipQuestion(t, t.TempDir(), 16000)
	b, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, User: "wideband", Codecs: []string{"G722"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := b.Dial("sip:handset@" + trunk.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nhandset:\n%s", err, b.Log(), r.logs.String())
	}
	// Recorded at G.722's 16 kHz, or the call did not run in G.722.
	finishBaresipCall(t, ctx, r, b, 16000, "in G.722")
}
