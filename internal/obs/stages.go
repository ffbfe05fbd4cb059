package obs

import (
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/registry"
)

// The six stage checks. Each reports what its stage did and, when the stage broke, the
// problem, the fix and the journal lines that show it. A stage whose input never came
// (no media for the VAD, no caller turn for the agent) is "not reached".

func (d *digest) carrier() check {
	f := &CarrierFacts{FirstMediaMS: d.firstMS(MediaFirstIn)}
	for _, e := range d.byType[MediaMalformed] {
		f.Malformed = max(f.Malformed, e.Count, 1)
	}
	c := check{report: StageReport{Stage: StageCarrier, Carrier: f}}
	who := carrierName(d.name(StageCarrier))
	var parts []string
	if f.FirstMediaMS >= 0 {
		parts = append(parts, "media from "+seconds(f.FirstMediaMS))
	} else {
		parts = append(parts, "no media")
	}
	if f.Malformed > 0 {
		parts = append(parts, plural(f.Malformed, "malformed frame")+" dropped")
	}
	if d.end != nil {
		parts = append(parts, "ended "+d.end.Reason)
	}
	c.report.Detail = strings.Join(parts, ", ")
	switch {
	case d.signallingCheck(&c, who):
		// The call's own signalling failed (an answer never acknowledged): what follows
		// from it, no audio included, is not the carrier's media.
	case f.FirstMediaMS < 0 && d.end != nil && d.end.Reason == "tts_failed":
		// Handset ended the call at once (no voice could speak) before audio came: not the
		// carrier's doing.
	case f.FirstMediaMS < 0:
		c.fail(fmt.Sprintf("%s connected but sent no audio in %s", who, seconds(d.durationMS())),
			carrierFix(d.name(StageCarrier)), true,
			d.lines(d.start, nil, fmt.Sprintf("no %s before the end at %s", MediaFirstIn, seconds(d.durationMS())), d.end)...)
	case d.end != nil && d.end.Reason == "media_error" && d.signalled():
		c.fail(d.mediaTimeoutProblem(who), mediaStoppedFix(d.name(StageCarrier)), true,
			d.lines(d.first(MediaFirstIn), nil, "", d.end)...)
	case d.end != nil && d.end.Reason == "media_error":
		c.fail(fmt.Sprintf("the media stream from %s broke at %s", who, seconds(d.end.MS)),
			"The carrier's WebSocket failed mid-call; the server log has the error (\"media leg failed\"). Check proxies, tunnels and load balancers between the carrier and Handset for idle timeouts and message size limits.",
			true, d.lines(d.first(MediaFirstIn), nil, "", d.end)...)
	}
	if bad := d.byType[MediaMalformed]; len(bad) > 0 {
		c.warn(fmt.Sprintf("%s dropped as unreadable (first: %s)", plural(f.Malformed, "media frame"), clip(bad[0].Message, 80)),
			"Something between the carrier and Handset rewrites its WebSocket messages, or the carrier sends a format Handset does not read; the first message says which.")
	}
	return c
}

// carrierName names the carrier as the registry's entry for it does; the browser leg is
// not a carrier of the catalogue.
func carrierName(name string) string {
	switch name {
	case "browser":
		return "the browser"
	case "":
		return "the carrier"
	}
	if c, ok := registry.Find[registry.Carrier](name); ok && c.Title != "" {
		return c.Title
	}
	return name
}

// carrierFix is what to check when the carrier sent no audio: the carrier's own advice
// from the registry (Hints.NoMediaFix), else advice that fits any carrier.
func carrierFix(name string) string {
	if name == "browser" {
		return "The browser page sent no microphone audio: allow the microphone for the page, check the browser's input device, and that the page is served over https or from localhost."
	}
	if c, ok := registry.Find[registry.Carrier](name); ok && c.Hints.NoMediaFix != "" {
		return c.Hints.NoMediaFix
	}
	return "The carrier opened the media stream but sent no audio: check the carrier's stream settings and every proxy between it and Handset."
}

func (d *digest) vad() check {
	f := &VADFacts{SpeechStarts: d.n(VADSpeechStart), SpeechEnds: d.n(VADSpeechEnd), FirstSpeechMS: d.firstMS(VADSpeechStart)}
	c := check{report: StageReport{Stage: StageVAD, VAD: f}}
	media := d.first(MediaFirstIn)
	if media == nil {
		c.report.Status, c.report.Detail = StatusNotReached, "no media"
		return c
	}
	heard := d.durationMS() - media.MS
	if sup, words := d.callerTakenForEcho(); sup != nil {
		c.fail(fmt.Sprintf("the caller talked over the agent in turn %d (the recognizer heard %q) but never interrupted it: the echo path took %s of audio, up to %.0f dBFS, for the agent's own echo",
			sup.Turn, words.Text, seconds(int64(sup.Count)*20), sup.LevelDB),
			"Handset tells the caller from the agent's echo by the echo path it learns (the journal's echo.path line). If the line returns no echo (most carriers and phones cancel it), HANDSET_ECHO=off hands every frame to the voice activity detector; if the learned delay sits near HANDSET_ECHO_MAX_DELAY, raise it. docs/turn-taking.md explains both.",
			false, d.lines(words, sup, "", nil)...)
		return c
	}
	if f.SpeechStarts > 0 {
		c.report.Detail = fmt.Sprintf("%s, the first at %s", plural(f.SpeechStarts, "speech start"), seconds(f.FirstSpeechMS))
		return c
	}
	c.report.Detail = "no speech in " + seconds(heard) + " of audio"
	if d.n(STTFinal) > 0 || d.n(TurnCommit) > 0 {
		return c // the recognizer heard words: the turns went on without the VAD
	}
	if heard < shortCallMS {
		c.warn(fmt.Sprintf("the caller hung up %s after the audio started, without speaking", seconds(heard)),
			"Nothing to fix if the caller simply hung up.")
		return c
	}
	c.fail(fmt.Sprintf("audio arrived for %s but the voice activity detector never heard the caller speak", seconds(heard)),
		"If the caller did speak: check the line carries their voice (a muted phone or one-way audio sends silence). The detector is HANDSET_VAD (silero, webrtc or energy): lower HANDSET_VAD_THRESHOLD for silero or try HANDSET_VAD=energy; HANDSET_VAD_START is how much speech it needs first.",
		false, d.lines(media, nil, fmt.Sprintf("no %s in %s of audio", VADSpeechStart, seconds(heard)), d.end)...)
	return c
}

// callerTakenForEcho finds a turn in which the recognizer heard words that were not the
// agent's own while the agent spoke, the agent was not interrupted, and the echo path took
// audible inbound audio away: the caller's voice was taken for the agent's echo. It
// returns that turn's echo.suppressed line and the words.
func (d *digest) callerTakenForEcho() (sup, words *Event) {
	echoed := map[string]bool{}
	for _, e := range d.byType[noteDropped] {
		if text, ok := strings.CutPrefix(e.Text, "echo: "); ok {
			echoed[text] = true
		}
	}
	for i := range d.byType[EchoSuppressed] {
		e := &d.byType[EchoSuppressed][i]
		t := d.turns[e.Turn]
		if t == nil || t.interrupted || t.firstAudio == nil || d.bargedIn(e.Turn) {
			continue
		}
		until := t.untilMS
		for _, p := range d.byType[PlayoutDone] {
			if p.Turn == e.Turn && p.MS >= t.firstAudio.MS {
				until = min(until, p.MS)
			}
		}
		for j := range d.byType[STTFinal] {
			w := &d.byType[STTFinal][j]
			if w.MS > t.firstAudio.MS && w.MS <= until && strings.TrimSpace(w.Text) != "" && !echoed[w.Text] {
				return e, w
			}
		}
	}
	return nil, nil
}

// bargedIn: the caller interrupted turn n.
func (d *digest) bargedIn(n int) bool {
	for _, e := range d.byType[BargeIn] {
		if e.Turn == n {
			return true
		}
	}
	return false
}

func (d *digest) stt() check {
	errs := d.byType[STTError]
	f := &STTFacts{Finals: d.n(STTFinal), Partials: d.n(STTPartial), Dropped: d.n(noteDropped),
		Commits: d.n(TurnCommit), Errors: len(errs), FirstFinalMS: d.firstMS(STTFinal)}
	c := check{report: StageReport{Stage: StageSTT, STT: f, Errors: stageErrors(errs)}}
	if d.first(MediaFirstIn) == nil && len(errs) == 0 {
		c.report.Status, c.report.Detail = StatusNotReached, "no media"
		return c
	}
	parts := []string{plural(f.Finals, "final"), plural(f.Partials, "partial")}
	if f.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped", f.Dropped))
	}
	if len(errs) > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(len(errs), "error"), kindCounts(errs)))
	}
	c.report.Detail = strings.Join(parts, ", ")
	p := sttProvider(d.name(StageSTT))
	if len(errs) > 0 && errs[0].Name != "" {
		p = sttProvider(errs[0].Name) // the recognizer that failed: the first, or the fallback
	}
	spoke := d.first(VADSpeechStart)
	switch {
	case len(errs) > 0 && f.Finals == 0 && f.Commits == 0:
		cause, fix := explain(p, StageSTT, &errs[0])
		what := "speech recognition was down for the whole call"
		if spoke != nil {
			what = "the caller spoke but nothing was transcribed"
		}
		c.fail(cause+": "+what, fix, true, append(evidenceOf(errs, 3), d.lines(spoke, nil, "", d.end)...)...)
	case spoke != nil && f.Finals == 0 && f.Commits == 0:
		d.sttSilent(&c, p, spoke)
	case f.Finals > 0 && f.Commits == 0:
		d.sttNoTurn(&c)
	case len(errs) > 0 && d.deafAfter(errs[len(errs)-1]) > 0:
		last := errs[len(errs)-1]
		cause, fix := explain(p, StageSTT, &last)
		c.fail(fmt.Sprintf("%s: speech recognition stopped at %s and the caller spoke %s after it, unheard", cause, seconds(last.MS), plural(d.deafAfter(last), "time")),
			fix, true, append(evidenceOf(errs, 3), d.lines(nil, nil, fmt.Sprintf("no %s after %s", STTFinal, seconds(last.MS)), d.end)...)...)
	case len(errs) > 0:
		_, fix := explain(p, StageSTT, &errs[0])
		c.warn(fmt.Sprintf("speech recognition failed %s (%s) but recovered", plural(len(errs), "time"), kindCounts(errs)), fix)
	}
	return c
}

// deafAfter counts the caller's utterances after err that got no transcript: speech that
// ended, with time to settle, and no final after err at all.
func (d *digest) deafAfter(err Event) int {
	for _, f := range d.byType[STTFinal] {
		if f.MS >= err.MS {
			return 0
		}
	}
	n := 0
	for _, e := range d.byType[VADSpeechEnd] {
		if e.MS > err.MS && d.durationMS()-e.MS >= settleMS {
			n++
		}
	}
	return n
}

// sttSilent: the caller spoke, the recognizer never returned a final transcript.
func (d *digest) sttSilent(c *check, p provider, spoke *Event) {
	ends := d.byType[VADSpeechEnd]
	if len(ends) == 0 || d.durationMS()-ends[0].MS < settleMS {
		c.warn("the caller hung up while speaking, before a transcript came", "Nothing to fix if the caller simply hung up.")
		return
	}
	problem := fmt.Sprintf("the caller spoke (%s) but %s returned no transcript", plural(d.n(VADSpeechStart), "time"), p.name)
	if n := d.n(STTPartial); n > 0 {
		problem = fmt.Sprintf("the caller spoke but %s returned only %s, never a final transcript", p.name, plural(n, "partial"))
	}
	fix := p.modelFix + " The audio reached it" + orEmpty(" (", p.url, ")") + ", but nothing final came back."
	c.fail(problem, fix, false, d.lines(spoke, &ends[0], fmt.Sprintf("no %s before the end at %s", STTFinal, seconds(d.durationMS())), d.end)...)
}

// sttNoTurn: transcripts came but none became a caller turn.
func (d *digest) sttNoTurn(c *check) {
	finals := d.byType[STTFinal]
	last := finals[len(finals)-1]
	if d.durationMS()-last.MS < settleMS+1000 {
		c.warn("the caller hung up right after speaking, before the turn was handed to the agent", "Nothing to fix if the caller simply hung up.")
		return
	}
	dropped := d.byType[noteDropped]
	if len(dropped) == 0 {
		c.fail(fmt.Sprintf("STT returned %s but none became a caller turn", plural(len(finals), "transcript")),
			"Turn-taking never committed the caller's words: the journal's timer and barge_in lines show what it waited for; HANDSET_TAIL_GRACE and HANDSET_BARGE_IN_CONFIRM are its knobs.",
			false, append(evidenceOf(finals, 3), d.lines(nil, nil, "no "+TurnCommit, d.end)...)...)
		return
	}
	c.fail(fmt.Sprintf("STT returned %s but the filters dropped them (%s)", plural(len(finals), "transcript"), clip(dropped[0].Text, 60)),
		"\"echo\" means the words matched what the agent had just said (the agent's voice coming back on a speakerphone or a loud line); \"non-speech\" means only noise words were heard; \"duplicate\" repeats the last turn. If these were the caller's real words, the line echoes: ask the caller to use a handset.",
		false, append(evidenceOf(dropped, 3), d.lines(nil, nil, "no "+TurnCommit, d.end)...)...)
}

func (d *digest) agent() check {
	errs := d.byType[AgentError]
	f := &AgentFacts{Requests: d.n(AgentRequest), FirstTokens: d.n(AgentFirstToken), Replies: d.n(AgentDone),
		Errors: len(errs), Progress: d.n(AgentProgress)}
	c := check{report: StageReport{Stage: StageAgent, Agent: f, Errors: stageErrors(errs)}}
	if d.n(TurnCommit) == 0 && f.Requests == 0 {
		c.report.Status, c.report.Detail = StatusNotReached, "no caller turn"
		return c
	}
	c.report.Detail = fmt.Sprintf("%s, %d answered", plural(f.Requests, "request"), f.Replies)
	if len(errs) > 0 {
		c.report.Detail += fmt.Sprintf(", %s (%s)", plural(len(errs), "error"), kindCounts(errs))
	}
	p := agentProvider(d.name(StageAgent))
	if len(errs) > 0 {
		cause, fix := explain(p, StageAgent, &errs[0])
		c.fail(fmt.Sprintf("%s: %d of %s failed (Handset spoke HANDSET_ERROR_MESSAGE instead)", cause, len(errs), plural(f.Requests, "caller turn")),
			fix, true, evidenceOf(errs, 3)...)
		return c
	}
	var empty, replied int
	for _, t := range d.turnsInOrder() {
		switch {
		case t.request == nil || t.interrupted:
		case t.firstToken == nil && t.done == nil && t.untilMS-t.request.MS >= agentStuckMS:
			what := "nothing"
			if t.progress {
				what = "only tool progress"
			}
			c.fail(fmt.Sprintf("%s never answered turn %d: %s in %s", p.name, t.n, what, seconds(t.untilMS-t.request.MS)),
				"Check "+reach(p)+"; its own log shows the request. HANDSET_AGENT_TIMEOUT (60s by default) is how long Handset waits for a word, HANDSET_AGENT_TURN_TIMEOUT (90s) for the whole turn, before it speaks the error message.",
				false, d.lines(t.request, nil, fmt.Sprintf("no %s for turn %d", AgentFirstToken, t.n), d.end)...)
			return c
		case t.done != nil && !t.replied && t.firstToken == nil:
			empty++
		case t.done != nil:
			replied++
		}
	}
	if empty > 0 && replied == 0 {
		c.fail(fmt.Sprintf("%s answered every turn with an empty reply", p.name),
			"The runtime finished without any text: its log shows why (an answer made only of tool calls, or a model that returned nothing). HANDSET_SYSTEM_PROMPT asks for a spoken reply.",
			false, evidenceOf(d.byType[AgentDone], 3)...)
	} else if empty > 0 {
		c.warn(fmt.Sprintf("%s answered %s with an empty reply", p.name, plural(empty, "turn")),
			"The runtime finished those turns without any text: its log shows why.")
	}
	return c
}

func (d *digest) tts() check {
	errs := d.byType[TTSError]
	f := &TTSFacts{Requests: d.n(TTSRequest), Errors: len(errs), Fillers: d.n(Filler)}
	for _, t := range d.turns {
		if t.ttsByte != nil {
			f.FirstBytes++
		}
	}
	c := check{report: StageReport{Stage: StageTTS, TTS: f, Errors: stageErrors(errs)}}
	if f.Requests == 0 {
		c.report.Status, c.report.Detail = StatusNotReached, "nothing to say"
		return c
	}
	_, greeting := d.turns[0]
	greeting = greeting && d.turns[0].ttsByte != nil
	c.report.Detail = fmt.Sprintf("%s, audio for %s", plural(f.Requests, "sentence"), turnsText(f.FirstBytes, greeting))
	if len(errs) > 0 {
		c.report.Detail += fmt.Sprintf(", %s (%s)", plural(len(errs), "error"), kindCounts(errs))
	}
	p := ttsProvider(d.name(StageTTS))
	if len(errs) > 0 {
		if errs[0].Name != "" {
			p = ttsProvider(errs[0].Name) // the voice that failed: the first, or the fallback
		}
		cause, fix := explain(p, StageTTS, &errs[0])
		// A journal that names the failing voice also records every sentence no voice
		// could speak (tts.lost); the other failures were mended by a retry or the
		// fallback voice. An older journal lost every sentence that failed.
		lost := d.byType[TTSLost]
		if errs[0].Name != "" && len(lost) == 0 {
			c.warn(fmt.Sprintf("%s (%s), but every sentence was spoken: tried again, or by the fallback voice", cause, plural(len(errs), "failure")), fix)
			return c
		}
		if len(lost) > 0 {
			what := plural(len(lost), "sentence") + " of " + plural(f.Requests, "sentence") +
				" could not be spoken by any voice (the caller heard HANDSET_ERROR_MESSAGE instead)"
			if d.end != nil && d.end.Reason == "tts_failed" {
				what = "no voice could speak, not even the error message, so the call ended (tts_failed)"
			}
			c.fail(cause+": "+what, fix+" HANDSET_TTS_FALLBACK names a second voice for when the first fails.",
				true, append(evidenceOf(errs, 2), evidenceOf(lost, 2)...)...)
			return c
		}
		c.fail(cause+": "+d.ttsLoss(len(errs)), fix, true, evidenceOf(errs, 3)...)
		return c
	}
	for _, t := range d.turnsInOrder() {
		if t.ttsReq != nil && t.ttsByte == nil && !t.interrupted && t.untilMS-t.ttsReq.MS >= ttsStuckMS {
			c.fail(fmt.Sprintf("%s returned no audio for %s: nothing in %s", p.name, turnName(t.n), seconds(t.untilMS-t.ttsReq.MS)),
				"Check "+reach(p)+"; Handset asked for speech and waited.",
				false, d.lines(t.ttsReq, nil, fmt.Sprintf("no %s for %s", TTSFirstByte, turnName(t.n)), d.end)...)
			return c
		}
	}
	return c
}

// ttsLoss says what the caller missed because TTS failed.
func (d *digest) ttsLoss(errors int) string {
	var reply, greeting bool
	for _, t := range d.turns {
		lost := t.ttsReq != nil && t.ttsByte == nil && !t.interrupted
		reply = reply || lost && t.n > 0 && (t.replied || t.firstToken != nil || t.agentErr != nil)
		greeting = greeting || lost && t.n == 0
	}
	switch {
	case reply:
		return "the agent replied but no audio went out"
	case greeting:
		return "the greeting was never spoken"
	}
	return fmt.Sprintf("%s of %s could not be spoken", plural(errors, "sentence"), plural(d.n(TTSRequest), "sentence"))
}

// turnsText counts turns with the greeting (turn 0) named apart: "the greeting and 2 turns".
func turnsText(n int, greeting bool) string {
	switch {
	case !greeting:
		return plural(n, "turn")
	case n == 1:
		return "the greeting"
	}
	return "the greeting and " + plural(n-1, "turn")
}

func turnName(n int) string {
	if n == 0 {
		return "the greeting"
	}
	return fmt.Sprintf("turn %d", n)
}

func (d *digest) playout() check {
	f := &PlayoutFacts{Marks: d.n(PlayoutMark), Done: d.n(PlayoutDone), Clears: d.n(Clear),
		BargeIns: d.n(BargeIn), FirstAudioMS: d.firstMS(PlayoutFirstAudio)}
	for _, t := range d.turns {
		if t.firstAudio != nil {
			f.FirstAudio++
			f.Greeting = f.Greeting || t.n == 0
		}
	}
	c := check{report: StageReport{Stage: StagePlayout, Playout: f}}
	if d.n(TTSFirstByte) == 0 && f.FirstAudio == 0 {
		c.report.Status, c.report.Detail = StatusNotReached, "no audio synthesised"
		return c
	}
	c.report.Detail = fmt.Sprintf("audio out for %s; %s and %s confirmed", turnsText(f.FirstAudio, f.Greeting),
		plural(f.Marks, "sentence"), plural(f.Done, "turn end"))
	if f.BargeIns > 0 {
		c.report.Detail += ", " + plural(f.BargeIns, "barge-in")
	}
	for _, t := range d.turnsInOrder() {
		if t.ttsByte != nil && t.firstAudio == nil && !t.interrupted && t.untilMS-t.ttsByte.MS >= playoutStuckMS {
			c.fail(fmt.Sprintf("audio was synthesised for %s but never reached %s", turnName(t.n), carrierName(d.name(StageCarrier))),
				"Handset could not send audio on the media stream: the server log says why (\"media leg failed\", \"playout\"); a proxy or tunnel that buffers WebSocket messages does this too.",
				false, d.lines(t.ttsByte, nil, fmt.Sprintf("no %s for %s", PlayoutFirstAudio, turnName(t.n)), d.end)...)
			return c
		}
	}
	if first := d.first(PlayoutFirstAudio); first != nil && f.Marks+f.Done == 0 && d.durationMS()-first.MS >= noMarksMS {
		who := carrierName(d.name(StageCarrier))
		c.fail(fmt.Sprintf("audio went out but %s never confirmed playing any of it: no marks came back in %s", who, seconds(d.durationMS()-first.MS)),
			who+" sends a mark back once the audio before it has played; none came, so the caller probably heard nothing. Check that nothing between the carrier and Handset (a proxy, tunnel or load balancer) drops WebSocket messages in either direction.",
			false, d.lines(first, nil, fmt.Sprintf("no %s or %s", PlayoutMark, PlayoutDone), d.end)...)
	}
	return c
}

// lines renders evidence: a and b when set, then a note about what is missing, then the
// call's end.
func (d *digest) lines(a, b *Event, missing string, end *Event) []string {
	var out []string
	for _, e := range []*Event{a, b} {
		if e != nil {
			out = append(out, evidenceLine(e))
		}
	}
	if missing != "" {
		out = append(out, missing)
	}
	if end != nil {
		out = append(out, evidenceLine(end))
	}
	return out
}
