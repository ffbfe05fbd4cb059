package sipsim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Kit is the SIP trunk's carrier kit (simkit.Kit): a simulated trunk that calls Handset's
// SIP listener from 127.0.0.1, each call's audio on a simulated phone over RTP.
//
// What differs from the media-stream carriers, and why:
//   - RTP carries audio and key presses only: the phone records no marks or clears, and
//     finds where Handset's replies end in the audio (phone.Info.AudioOnly,
//     phone.ReplyEnded). Register it with simkit.RegisterTool: the whole-call scenarios
//     assert marks this wire has not got.
//   - Handset's side is a listener, not a URL: Call ignores handsetURL and dials the
//     HANDSET_SIP_LISTEN address the kit chose free and gave in Settings.
//   - A trunk authenticates by its address, not by signatures: Secret is unused.
//   - Outbound calls through a trunk are not built yet: Calls is empty and WaitCall fails
//     with simkit.ErrUnsupported.
var Kit simkit.Kit = kit{}

type kit struct{}

func (kit) Name() string { return "sip" }

// DefaultNumber is the number the trunk's calls are to when VendorOptions.Numbers is
// empty; DefaultCallerNumber is who calls when CallOptions.From is empty.
const (
	DefaultNumber       = "+15550100005"
	DefaultCallerNumber = "+15550100905"
)

// rtpPortsWidth is how many ports the RTP range the kit gives Handset spans: two per
// call (RTP on the even one), with room for a bench's hundreds of calls.
const rtpPortsWidth = 2000

// Start starts a simulated trunk on 127.0.0.1 and picks the SIP port Handset is to
// listen on. Frame other than 20 ms and EarlyFrames are refused: the trunk sends 20 ms
// packets, and no audio before Handset's answer.
func (kit) Start(_ context.Context, o simkit.VendorOptions) (simkit.Vendor, error) {
	if o.Frame != 0 && o.Frame != 20*time.Millisecond {
		return nil, fmt.Errorf("sipsim: %v RTP packets (the simulated trunk sends 20 ms): %w", o.Frame, simkit.ErrUnsupported)
	}
	if o.EarlyFrames > 0 {
		return nil, fmt.Errorf("sipsim: audio before the answer (early frames): %w", simkit.ErrUnsupported)
	}
	if o.Secret == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.Secret = hex.EncodeToString(b)
	}
	if len(o.Numbers) == 0 {
		o.Numbers = []string{DefaultNumber}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// The trunk's own port first: picked after Handset's, it could take the one just freed.
	caller, err := NewCaller(CallerOptions{Addr: netip.AddrPortFrom(trunkHost, 0).String(), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	listen, err := freeSIPPort(trunkHost)
	if err != nil {
		caller.Close()
		return nil, err
	}
	low := 20000 + 2*int(randomUint32()%uint32((60000-20000-rtpPortsWidth)/2))
	return &vendor{opts: o, caller: caller, listen: listen, rtpLow: low, rtpHigh: low + rtpPortsWidth - 1}, nil
}

// trunkHost is where the simulated trunk and the Handset it calls both are.
var trunkHost = netip.MustParseAddr("127.0.0.1")

// freeSIPPort finds a port on host that is free for both UDP and TCP, as Handset listens
// on both; it is free when checked, as any port picked ahead of use.
func freeSIPPort(host netip.Addr) (netip.AddrPort, error) {
	for range 20 {
		ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(host, 0)))
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("sipsim: find a SIP port: %w", err)
		}
		ap := ln.Addr().(*net.TCPAddr).AddrPort()
		udp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		ln.Close()
		if err == nil {
			udp.Close()
			return netip.AddrPortFrom(host, ap.Port()), nil
		}
	}
	return netip.AddrPort{}, errors.New("sipsim: no port on 127.0.0.1 free for both UDP and TCP")
}

// vendor is a running simulated trunk.
type vendor struct {
	opts            simkit.VendorOptions
	caller          *Caller
	listen          netip.AddrPort // Handset's SIP listener, as Settings gives it
	rtpLow, rtpHigh int
	arrival         arrivalMeter // every call's audio from Handset, timed as it arrived
	closeOnce       sync.Once
}

// ArrivalLateness is simkit.ArrivalMeter: how late Handset's audio packets reached the
// trunk's phones against the schedule of their RTP timestamps.
func (v *vendor) ArrivalLateness(q float64) (time.Duration, int64) { return v.arrival.quantile(q) }

func (v *vendor) Secret() string { return v.opts.Secret }

// Settings are what Handset needs to take the trunk's calls: the trunk's address as the
// only one allowed, the listener the kit picked, an RTP port range. publicURL is not used:
// SIP reaches Handset at its listener.
func (v *vendor) Settings(string) []string {
	return []string{
		"HANDSET_SIP_ALLOW=" + trunkHost.String(),
		"HANDSET_SIP_LISTEN=" + v.listen.String(),
		"HANDSET_SIP_RTP_PORTS=" + strconv.Itoa(v.rtpLow) + "-" + strconv.Itoa(v.rtpHigh),
		"HANDSET_PHONE_NUMBER=" + v.opts.Numbers[0],
	}
}

// Call places a call from the trunk to Handset's SIP listener (handsetURL is not used) and
// returns its phone once the call is answered and acknowledged. Ref, Attestation and
// Params are not carried: a trunk's Call-ID is its own, and its attestation rides in
// headers Handset does not read yet.
func (v *vendor) Call(ctx context.Context, _ string, c simkit.CallOptions) (phone.Phone, error) {
	o := CallOptions{From: c.From, To: c.To, HandOffMedia: true}
	if o.From == "" {
		o.From = DefaultCallerNumber
	}
	if c.Withheld {
		o.From = "anonymous"
	}
	if o.To == "" {
		o.To = v.opts.Numbers[0]
	}
	call, err := v.caller.Call(ctx, v.listen, o)
	if err != nil {
		return nil, err
	}
	po := phone.Options{Ref: call.SIPCallID(), Lean: v.opts.Lean || c.Lean, Echo: v.opts.Echo, Silent: v.opts.Silent,
		Clock: v.opts.Clock, Logger: v.opts.Logger}
	if c.Echo != nil {
		po.Echo = c.Echo
	}
	p, err := phone.RunTransport(ctx, newTransport(call, &v.arrival), newRTPWire(call), po)
	if err != nil {
		return nil, fmt.Errorf("sipsim: the phone on call %s: %w", call.SIPCallID(), err)
	}
	return p, nil
}

// MalformedFrames are datagrams on p's RTP port that are not RTP Handset can play: too
// short for a header, the wrong version, and a payload type the answer did not agree.
func (v *vendor) MalformedFrames(phone.Phone) []string {
	unagreed := []byte{2 << 6, 99, 0, 1, 0, 0, 0, 160, 0, 0, 0, 42}
	unagreed = append(unagreed, make([]byte, 160)...)
	return []string{"not rtp", string([]byte{1 << 6, 0, 0, 1, 0, 0, 0, 160, 0, 0, 0, 42}), string(unagreed)}
}

// Calls is empty: outbound calls through a trunk are not built yet.
func (v *vendor) Calls() []simkit.OutboundCall { return nil }

// WaitCall fails with simkit.ErrUnsupported: outbound calls through a trunk are not built
// yet.
func (v *vendor) WaitCall(context.Context, int) (simkit.OutboundCall, error) {
	return simkit.OutboundCall{}, fmt.Errorf("sipsim: outbound calls through a SIP trunk: %w", simkit.ErrUnsupported)
}

// Close hangs up every call still up (a BYE each) and stops the trunk.
func (v *vendor) Close() error {
	v.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, call := range v.caller.live() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), hangupTimeout)
				defer cancel()
				_ = call.Hangup(ctx)
			}()
		}
		wg.Wait()
		v.caller.Close()
	})
	return nil
}
