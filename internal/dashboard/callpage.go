package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"os"
	"strings"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	maxJournalBytes = 64 << 20 // a journal larger than this is not read for the page
	eventsShown     = 5000     // the journal view lists at most this many events
	waveBuckets     = 600
	maxCallID       = 128
	idChars         = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-"
)

// callID reads the {id} of a path, refusing what no call id looks like.
func callID(r *http.Request) (voice.CallID, bool) {
	id := r.PathValue("id")
	if id == "" || len(id) > maxCallID || strings.Trim(id, idChars) != "" {
		return "", false
	}
	return voice.CallID(id), true
}

// readJournal reads a call's journal; a missing, unreadable or oversized one is said why.
func readJournal(path string) ([]obs.Event, string) {
	if path == "" {
		return nil, "This call has no journal: its media never arrived."
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "The call's journal is not on this node (another node may have run the call): the transcript comes from the store."
	}
	if fi.Size() > maxJournalBytes {
		return nil, fmt.Sprintf("The call's journal is %d MB, too large to show here: use handset trace.", fi.Size()>>20)
	}
	events, err := obs.ReadFile(path)
	if err != nil && len(events) == 0 {
		return nil, "The call's journal could not be read: " + err.Error()
	}
	return events, ""
}

// mark is a moment of the call marked on the recording's waveform.
type mark struct {
	MS    int64
	Class string
	Label string
}

func (d *Dashboard) callPage(w http.ResponseWriter, r *http.Request, v viewer) {
	id, ok := callID(r)
	if !ok {
		d.problem(w, r, v, http.StatusNotFound, "There is no such call.")
		return
	}
	c, err := d.o.Source.Call(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		d.problem(w, r, v, http.StatusNotFound, "There is no call "+quote(string(id))+".")
		return
	}
	if err != nil {
		d.storeFailed(w, r, v, err)
		return
	}
	data := map[string]any{"Title": "Call " + string(c.ID), "Call": v.callRow(c, d.o.Now()), "Record": c}
	events, note := readJournal(c.Journal)
	data["JournalNote"] = note
	if events != nil {
		trace := obs.Trace(events)
		turns := timings(events)
		data["Trace"] = trace
		// A running call has not reached its later stages yet: judged now, they would read
		// as broken (a caller who has not spoken yet as a deaf VAD).
		if !c.EndedAt.IsZero() {
			data["Verdict"] = obs.Diagnose(events)
			data["Stages"] = trace.Stages
		}
		data["Conversation"] = conversation(events)
		data["Waterfall"] = waterfall(turns)
		data["Latency"] = latencyRows(trace.Latency, turns)
		data["Turns"] = turns
		data["Events"] = events[:min(len(events), eventsShown)]
		data["EventsCut"] = len(events) > eventsShown
	} else {
		lines, err := d.o.Source.Transcript(r.Context(), c.ID)
		if err != nil {
			d.storeFailed(w, r, v, err)
			return
		}
		data["Conversation"] = storedConversation(c, lines)
	}
	if player := d.player(c, events); player != nil {
		data["Player"] = player
	}
	if d.o.Live != nil {
		if state, ok := d.o.Live.State(c.ID); ok {
			data["LiveState"] = state
		}
	}
	d.render(w, r, http.StatusOK, "call", v, data)
}

// playerView is the recording's section of a call page.
type playerView struct {
	Src      string
	Waveform template.HTML
	Marks    []mark
	Problem  string
}

// player is the recording's section: nil when the call has none.
func (d *Dashboard) player(c store.Call, events []obs.Event) *playerView {
	if d.o.Recordings == nil {
		return nil
	}
	wf, err := d.o.Recordings.Waveform(c, waveBuckets)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	p := &playerView{Src: "/dashboard/calls/" + string(c.ID) + "/recording"}
	if err != nil {
		d.log.Warn("dashboard: a recording's waveform could not be read", "call", c.ID, "err", err)
		p.Problem = "The recording's waveform could not be read; the server log says why."
		return p
	}
	p.Marks = marks(events)
	p.Waveform = waveform(wf, p.Marks)
	return p
}

// marks are the turns, barge-ins and the part of each cut-off reply the caller heard.
func marks(events []obs.Event) []mark {
	var out []mark
	replyAt := map[int]int64{}
	for _, e := range events {
		switch e.Type {
		case obs.TurnCommit:
			out = append(out, mark{MS: e.MS, Class: "mark-turn", Label: fmt.Sprintf("Turn %d: the caller finished", e.Turn)})
		case obs.PlayoutFirstAudio, obs.PlayoutReplyAudio:
			if _, ok := replyAt[e.Turn]; !ok && e.Kind != "filler" {
				replyAt[e.Turn] = e.MS
				out = append(out, mark{MS: e.MS, Class: "mark-reply", Label: fmt.Sprintf("Turn %d: the reply starts", e.Turn)})
			}
		case obs.BargeIn:
			label := fmt.Sprintf("Turn %d: the caller barged in", e.Turn)
			if e.Text != "" {
				label += " after hearing " + quote(clipText(e.Text, 60))
			}
			out = append(out, mark{MS: e.MS, Class: "mark-barge", Label: label})
		}
	}
	return out
}

// Waveform geometry.
const (
	waveWidth  = 1000.0
	waveHeight = 120.0
)

// waveform draws the recording's two sides, the caller above the line and the agent
// below, with the marks as vertical lines (a click on one seeks the player there) and the
// heard part of each cut-off reply shaded. The playhead is moved by the page's script.
func waveform(wf Waveform, ms []mark) template.HTML {
	total := float64(wf.Duration.Milliseconds())
	if total <= 0 {
		total = 1
	}
	mid := waveHeight / 2
	lane := func(peaks []float32, sign float64) string {
		var b strings.Builder
		n := float64(max(len(peaks), 1))
		for i, p := range peaks {
			h := math.Max(float64(min(max(p, 0), 1))*(mid-4), 0.5)
			fmt.Fprintf(&b, "M%.1f %.1fv%.1f", float64(i)*waveWidth/n, mid, sign*h)
		}
		return b.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="wave" id="wave" viewBox="0 0 %.0f %.0f" preserveAspectRatio="none" role="img" aria-labelledby="wave-title wave-desc" data-duration-ms="%d">`,
		waveWidth, waveHeight, wf.Duration.Milliseconds())
	b.WriteString(`<title id="wave-title">Waveform of the recording</title>`)
	b.WriteString(`<desc id="wave-desc">The caller's audio above the middle line, the agent's below; vertical marks at each caller turn, reply and barge-in, listed below the player.</desc>`)
	barge := map[int64]bool{}
	var replyStart int64 = -1
	for _, m := range ms { // the heard part of a cut-off reply: from its start to the barge-in
		switch m.Class {
		case "mark-reply":
			replyStart = m.MS
		case "mark-barge":
			if replyStart >= 0 && !barge[m.MS] {
				barge[m.MS] = true
				fmt.Fprintf(&b, `<rect class="wave-heard" x="%.1f" y="0" width="%.1f" height="%.0f"><title>Heard before the barge-in</title></rect>`,
					float64(replyStart)/total*waveWidth, float64(m.MS-replyStart)/total*waveWidth, waveHeight)
			}
			replyStart = -1
		}
	}
	fmt.Fprintf(&b, `<path class="wave-caller" d="%s"></path><path class="wave-agent" d="%s"></path>`, lane(wf.Caller, -1), lane(wf.Agent, 1))
	fmt.Fprintf(&b, `<line class="wave-mid" x1="0" y1="%.0f" x2="%.0f" y2="%.0f"></line>`, mid, waveWidth, mid)
	for _, m := range ms {
		x := float64(m.MS) / total * waveWidth
		fmt.Fprintf(&b, `<line class="wave-mark %s" data-seek-ms="%d" x1="%.1f" y1="0" x2="%.1f" y2="%.0f"><title>%s at %s</title></line>`,
			m.Class, m.MS, x, x, waveHeight, esc(m.Label), esc(callClock(m.MS)))
	}
	fmt.Fprintf(&b, `<line class="wave-playhead" id="playhead" x1="0" y1="0" x2="0" y2="%.0f"></line></svg>`, waveHeight)
	return template.HTML(b.String())
}

// recording serves a call's recording, ranges and all.
func (d *Dashboard) recording(w http.ResponseWriter, r *http.Request, v viewer) {
	id, ok := callID(r)
	if !ok || d.o.Recordings == nil {
		plain(w, http.StatusNotFound, "This call has no recording.")
		return
	}
	c, err := d.o.Source.Call(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		plain(w, http.StatusNotFound, "There is no such call.")
		return
	}
	if err != nil {
		d.log.Warn("dashboard: the store failed", "call", id, "err", err)
		plain(w, http.StatusServiceUnavailable, "The store did not answer; try again in a moment.")
		return
	}
	f, modified, err := d.o.Recordings.Open(c)
	if errors.Is(err, os.ErrNotExist) {
		plain(w, http.StatusNotFound, "This call has no recording.")
		return
	}
	if err != nil {
		d.log.Warn("dashboard: a recording could not be opened", "call", id, "err", err)
		plain(w, http.StatusInternalServerError, "The recording could not be opened; the server log says why.")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `inline; filename="`+string(c.ID)+`.wav"`)
	http.ServeContent(w, r, "", modified, f)
}
