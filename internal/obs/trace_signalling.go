package obs

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// A carrier whose calls Handset sets up itself (a SIP trunk) journals its signalling as
// carrier.signal events. Trace shows them as the call's timeline; the carrier stage reads
// the failures only signalling shows: an answer never acknowledged, and an INVITE of a
// call already taken. Nothing here knows which carrier wrote them.

// FirstRTPOut names media.first_out in the signalling timeline.
const FirstRTPOut = "first RTP out"

// The signalling messages the checks look for, as on the wire.
const (
	signalOK     = "200 OK"
	signalACK    = "ACK"
	signalCancel = "CANCEL"
	signalLoop   = "482" // Loop Detected: an INVITE of a call already taken
)

// signallingOf is the timeline of a call's signalling, in the order things happened
// (the messages before call.start are journalled later with their own times).
func signallingOf(events []Event) []SignalLine {
	var out []SignalLine
	for _, e := range events {
		switch e.Type {
		case CarrierSignal:
			out = append(out, SignalLine{MS: e.MS, Name: e.Name, Direction: e.Kind, Reason: e.Reason})
		case MediaFirstOut:
			out = append(out, SignalLine{MS: e.MS, Name: FirstRTPOut, Direction: "out"})
		}
	}
	slices.SortStableFunc(out, func(a, b SignalLine) int { return cmp.Compare(a.MS, b.MS) })
	return out
}

// signal is the first carrier.signal named name (or starting with it, for a status code)
// going direction.
func (d *digest) signal(name, direction string) *Event {
	for i := range d.byType[CarrierSignal] {
		e := &d.byType[CarrierSignal][i]
		if e.Kind == direction && (e.Name == name || strings.HasPrefix(e.Name, name+" ")) {
			return e
		}
	}
	return nil
}

// signalCount counts the carrier.signal events named name (or starting with it) going
// direction.
func (d *digest) signalCount(name, direction string) int {
	n := 0
	for _, e := range d.byType[CarrierSignal] {
		if e.Kind == direction && (e.Name == name || strings.HasPrefix(e.Name, name+" ")) {
			n++
		}
	}
	return n
}

// signalled: the carrier journals its own signalling (Handset answered the call itself).
func (d *digest) signalled() bool { return d.n(CarrierSignal) > 0 }

// unacknowledged finds an answer the caller never acknowledged: the 200 OK went out and
// either the ACK's line says why it never came, or there is none and the call is over. A
// caller who cancelled while the answer was on its way is not that.
func (d *digest) unacknowledged() (answer, ack *Event) {
	answer = d.signal(signalOK, "out")
	if answer == nil || d.signal(signalCancel, "in") != nil {
		return nil, nil
	}
	ack = d.signal(signalACK, "in")
	switch {
	case ack == nil && d.end != nil:
		return answer, nil
	case ack != nil && ack.Reason != "" && !strings.Contains(strings.ToLower(ack.Reason), "cancel"):
		return answer, ack
	}
	return nil, nil
}

// ackFix is what to check when the caller never acknowledged Handset's answer.
const ackFix = "The caller never received Handset's 200 OK, or could not reach the Contact address in it: a NAT or firewall between them drops it. " +
	"Check HANDSET_SIP_PUBLIC_ADDR (behind NAT, the public address; it is the Contact address and the SDP's), and that the SIP port is forwarded to Handset over the transport the trunk uses. `handset doctor` checks both."

// loopFix is what to check when the same call's INVITE came again as a new call.
const loopFix = "The same call's INVITE came again after Handset had taken it (refused 482 Loop Detected): a routing loop (the trunk or a PBX routes the call back to itself, or two routes both deliver it), or a replay. " +
	"Check the trunk's routing, and that only one route sends each number to Handset."

// signallingCheck fails the carrier stage for what only the signalling shows; false when
// the signalling is sound (or there is none).
func (d *digest) signallingCheck(c *check, who string) bool {
	if !d.signalled() {
		return false
	}
	if answer, ack := d.unacknowledged(); answer != nil {
		why, missing := "no ACK came", fmt.Sprintf("no %s in ACK before the end at %s", CarrierSignal, seconds(d.durationMS()))
		if ack != nil {
			why, missing = "no ACK came: "+clip(ack.Reason, 80), ""
		}
		c.fail(fmt.Sprintf("the caller never acknowledged the answer: Handset sent 200 OK at %s and %s", seconds(answer.MS), why),
			ackFix, true, d.lines(answer, ack, missing, d.end)...)
		return true
	}
	loops := d.signalCount(signalLoop, "out")
	if loops == 0 {
		return false
	}
	problem := fmt.Sprintf("%s refused 482 Loop Detected: %s sent an INVITE of a call already taken", plural(loops, "INVITE"), who)
	if d.signal(signalOK, "out") != nil {
		c.warn(problem, loopFix)
		return false
	}
	c.fail(problem, loopFix, true, evidenceLine(d.signal(signalLoop, "out")))
	return true
}

// mediaTimeoutProblem says how a call whose own media (RTP) failed ended. The media
// stage fills silence while no packet comes, so media.first_in does not show whether any
// RTP came: the caller's words heard do.
func (d *digest) mediaTimeoutProblem(who string) string {
	if d.n(VADSpeechStart) > 0 || d.n(STTFinal) > 0 {
		return fmt.Sprintf("the caller's audio (RTP) from %s stopped and Handset ended the call at %s", who, seconds(d.end.MS))
	}
	return fmt.Sprintf("no audio (RTP) from %s was heard before Handset ended the call at %s: it never came, or stopped", who, seconds(d.end.MS))
}

// mediaStoppedFix is what to check when a carrier's own media (RTP) failed.
func mediaStoppedFix(carrier string) string {
	return "Handset ends a call whose RTP does not come or stops (a media timeout). RTP that stops mid-call is most often a NAT binding or a firewall's UDP state that expired. " +
		carrierFix(carrier)
}
