package sipsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// strangerHost is a loopback address the allow-list (trunkHost alone) does not name: the
// SIP scanner of the forgeries. Linux answers on all of 127.0.0.0/8.
var strangerHost = netip.MustParseAddr("127.0.0.2")

// noCommonCodec is an offer of G.729 alone, which Handset does not speak.
const noCommonCodec = "v=0\r\no=sipsim 4242 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
	"m=audio 40000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\na=ptime:20\r\na=sendrecv\r\n"

// Forgeries are the INVITEs Handset must refuse: one from an address the allow-list does
// not name (403, and no dialog), and one whose offer has no codec in common (488).
// handsetURL is not used: they go to the SIP listener of Settings.
func (v *vendor) Forgeries(string) []simkit.Forgery {
	return []simkit.Forgery{
		{Name: "INVITE from an address not allowed", Want: simkit.Refusal{Status: sip.StatusForbidden},
			Send: func(ctx context.Context) (simkit.Refusal, error) {
				stranger, err := NewCaller(CallerOptions{Addr: netip.AddrPortFrom(strangerHost, 0).String(), Logger: v.opts.Logger})
				if err != nil {
					return simkit.Refusal{}, err
				}
				defer stranger.Close()
				return refusedWith(stranger.Call(ctx, v.listen, CallOptions{From: DefaultCallerNumber, To: v.opts.Numbers[0]}))
			}},
		{Name: "INVITE with no codec in common", Want: simkit.Refusal{Status: sip.StatusNotAcceptableHere},
			Send: func(ctx context.Context) (simkit.Refusal, error) {
				return refusedWith(v.caller.Call(ctx, v.listen, CallOptions{Offer: []byte(noCommonCodec)}))
			}},
	}
}

// refusedWith is the status Handset refused a call with; a call it answered is hung up
// and reported as a 200.
func refusedWith(call *Call, err error) (simkit.Refusal, error) {
	var r *Refused
	switch {
	case errors.As(err, &r):
		return simkit.Refusal{Status: r.Status, Reason: r.Reason}, nil
	case err != nil:
		return simkit.Refusal{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangupTimeout)
	defer cancel()
	_ = call.Hangup(ctx)
	return simkit.Refusal{Status: sip.StatusOK}, nil
}

// replayQuiet is how long a replayed INVITE may go unanswered before the kit takes the
// silence as Handset's transaction layer absorbing it.
const replayQuiet = 2 * time.Second

// Replay places a call, hangs it up, then sends its INVITE again byte for byte from the
// trunk's address, as a retransmission that arrives late (or an attacker who recorded
// it). Handset must not set up a second call: it may stay silent (its transactions absorb
// the copy) or refuse it (481, or any failure status), but a 180 Ringing or a 2xx means
// it took the copy for a new call, and Replay says so.
func (v *vendor) Replay(ctx context.Context, _ string) error {
	call, err := v.caller.Call(ctx, v.listen, CallOptions{})
	if err != nil {
		return fmt.Errorf("sipsim: the call to replay: %w", err)
	}
	invite := []byte(call.sess.InviteRequest.String())
	if err := call.Hangup(ctx); err != nil {
		return fmt.Errorf("sipsim: hang up the call to replay: %w", err)
	}
	v.caller.heardFor(call.sipCallID) // the call's own responses, the BYE's 200 among them
	if _, err := v.caller.conn.WriteTo(invite, net.UDPAddrFromAddrPort(v.listen)); err != nil {
		return fmt.Errorf("sipsim: send the replayed INVITE: %w", err)
	}
	quiet := time.NewTimer(replayQuiet)
	defer quiet.Stop()
	for {
		for _, r := range v.caller.heardFor(call.sipCallID) {
			switch {
			case r.Status == sip.StatusRinging || (r.Status >= 200 && r.Status < 300):
				return fmt.Errorf("sipsim: Handset answered the replayed INVITE of an ended call %d: a second call", r.Status)
			case r.Status >= 300:
				return nil
			}
		}
		select {
		case <-v.caller.responded:
		case <-quiet.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
