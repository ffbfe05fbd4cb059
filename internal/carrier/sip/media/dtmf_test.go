package media

import "testing"

func TestEventRoundTrip(t *testing.T) {
	for _, e := range []event{{code: 11, end: true, volume: 10, duration: 800}, {code: 0, duration: 160}} {
		var b [eventBytes]byte
		encodeEvent(b[:], e)
		got, err := decodeEvent(b[:])
		if err != nil || got != e {
			t.Fatalf("round trip of %+v: %+v, %v", e, got, err)
		}
	}
	if _, err := decodeEvent([]byte{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte payload decoded")
	}
}

func TestDigitNames(t *testing.T) {
	for code, want := range map[uint8]string{0: "0", 9: "9", 10: "*", 11: "#", 12: "A", 15: "D", 16: "", 255: ""} {
		if got := digitName(code); got != want {
			t.Errorf("code %d: %q, want %q", code, got, want)
		}
		if want == "" {
			continue
		}
		if back, err := digitCode(want); err != nil || back != code {
			t.Errorf("digitCode(%q) = %d, %v; want %d", want, back, err, code)
		}
	}
	for _, bad := range []string{"", "E", "11", "x"} {
		if _, err := digitCode(bad); err == nil {
			t.Errorf("digitCode(%q) accepted a non-key", bad)
		}
	}
}

func payloadOf(e event) []byte {
	b := make([]byte, eventBytes)
	encodeEvent(b, e)
	return b
}

func TestReceiverReportsEachEventOnce(t *testing.T) {
	var r dtmfReceiver
	var got []string
	feed := func(ts uint32, e event) {
		d, err := r.receive(42, ts, payloadOf(e))
		if err != nil {
			t.Fatal(err)
		}
		if d != "" {
			got = append(got, d)
		}
	}
	// "5": three updates, three end packets, all at timestamp 1000.
	for i := 1; i <= 3; i++ {
		feed(1000, event{code: 5, duration: uint16(160 * i)})
	}
	for range 3 {
		feed(1000, event{code: 5, end: true, duration: 480})
	}
	// "5" again: a new event, a new timestamp; its first packets were lost.
	feed(3000, event{code: 5, end: true, duration: 800})
	// A retransmit of the first event after the second began.
	feed(1000, event{code: 5, end: true, duration: 480})
	// A flash (code 16) is no key.
	feed(5000, event{code: 16, duration: 160})
	feed(7000, event{code: 11, duration: 160})
	if want := []string{"5", "5", "#"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("reported %q, want %q", got, want)
	}
}
