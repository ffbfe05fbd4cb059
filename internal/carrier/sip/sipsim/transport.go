package sipsim

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/sim/phone"
)

// maxRTPPacket bounds a datagram read from Handset: G.711 at 20 ms is 172 bytes.
const maxRTPPacket = 1500

// hangupTimeout bounds the BYE a phone's hang-up sends.
const hangupTimeout = 5 * time.Second

// Transport hands the call's RTP socket to a simulated phone (phone.RunTransport) for a
// call placed with CallOptions.HandOffMedia: datagrams both ways, Handset's BYE reported as
// the far end closing normally, and Close sending the BYE.
func (call *Call) Transport() phone.Transport { return newTransport(call, nil) }

// newTransport is Transport timing the arrival of Handset's audio on meter, when not nil.
func newTransport(call *Call, meter *arrivalMeter) *rtpTransport {
	return &rtpTransport{call: call, buf: make([]byte, maxRTPPacket), meter: meter}
}

type rtpTransport struct {
	call  *Call
	buf   []byte // the datagram being read; owned by the reader
	watch sync.Once
	meter *arrivalMeter
	clock arrivalClock // owned by the reader
}

// errFarEndHungUp is Handset's BYE as the phone's transports report a close: normally.
var errFarEndHungUp = websocket.CloseError{Code: websocket.StatusNormalClosure, Reason: "BYE"}

func (t *rtpTransport) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	// One watcher for the reader's context, not one per datagram: it fails the pending read.
	t.watch.Do(func() {
		context.AfterFunc(ctx, func() { _ = t.call.rtpConn.SetReadDeadline(time.Now()) })
	})
	for {
		n, from, err := t.call.rtpConn.ReadFromUDPAddrPort(t.buf)
		if err != nil {
			if t.call.byFarEnd.Load() && errors.Is(err, net.ErrClosed) {
				return 0, nil, errFarEndHungUp
			}
			return 0, nil, err
		}
		if from != t.call.remote { // symmetric RTP: only the answer's address is the call's
			continue
		}
		opened, ok := t.call.srtp.openPacket(t.buf[:n])
		if !ok {
			continue
		}
		n = copy(t.buf, opened)
		if t.meter != nil && n >= rtpHeaderLen && t.buf[1]&0x7f == t.call.pt {
			t.meter.add(t.clock.lateness(t.buf[:rtpHeaderLen], time.Now()))
		}
		return websocket.MessageBinary, t.buf[:n], nil
	}
}

func (t *rtpTransport) Write(_ context.Context, msg []byte) error {
	msg, err := t.call.srtp.sealPacket(msg)
	if err != nil {
		return err
	}
	_, err = t.call.rtpConn.WriteToUDPAddrPort(msg, t.call.remote)
	return err
}

// Close is the caller hanging up: a BYE, then the socket goes.
func (t *rtpTransport) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), hangupTimeout)
	defer cancel()
	return t.call.Hangup(ctx)
}

func (t *rtpTransport) CloseNow() error {
	t.call.closeMedia()
	t.call.caller.forget(t.call)
	return nil
}
