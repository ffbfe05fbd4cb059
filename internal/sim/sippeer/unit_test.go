package sippeer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// The RFC 4733 stream: per digit five updates of growing duration on one timestamp, the
// first marked, then three end packets; silence in 20 ms mu-law packets between; one SSRC
// and an unbroken sequence throughout.
func TestDTMFRTPSendsEachDigitAsOneEvent(t *testing.T) {
	packets, d, err := dtmfRTP("1#")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(len(packets)) * 20 * time.Millisecond; d != want {
		t.Errorf("duration %v, want %v", d, want)
	}
	var (
		events   []byte
		lastSeq  uint16
		ssrc     uint32
		eventTS  = map[byte]uint32{}
		ends     = map[byte]int{}
		audioPTs int
	)
	for i, raw := range packets {
		var p rtp.Packet
		if err := p.Unmarshal(raw); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if i > 0 && (p.SequenceNumber != lastSeq+1 || p.SSRC != ssrc) {
			t.Fatalf("packet %d: sequence %d after %d, SSRC %x after %x", i, p.SequenceNumber, lastSeq, p.SSRC, ssrc)
		}
		lastSeq, ssrc = p.SequenceNumber, p.SSRC
		switch p.PayloadType {
		case 0:
			audioPTs++
			if len(p.Payload) != 160 {
				t.Errorf("audio packet %d carries %d bytes, want 160", i, len(p.Payload))
			}
		case DTMFPayloadType:
			event, end := p.Payload[0], p.Payload[1]&0x80 != 0
			duration := binary.BigEndian.Uint16(p.Payload[2:])
			if ts, seen := eventTS[event]; !seen {
				events = append(events, event)
				eventTS[event] = p.Timestamp
				if !p.Marker {
					t.Errorf("the first packet of event %d is not marked", event)
				}
			} else if ts != p.Timestamp || p.Marker {
				t.Errorf("event %d: timestamp %d after %d, marker %v", event, p.Timestamp, ts, p.Marker)
			}
			if end {
				ends[event]++
				if duration != 800 {
					t.Errorf("event %d ends after %d samples, want 800", event, duration)
				}
			}
		default:
			t.Errorf("packet %d: payload type %d", i, p.PayloadType)
		}
	}
	if string(events) != "\x01\x0b" {
		t.Errorf("events %v, want 1 then 11 (#)", events)
	}
	for _, e := range events {
		if ends[e] != 3 {
			t.Errorf("event %d has %d end packets, want 3", e, ends[e])
		}
	}
	if audioPTs != leadPackets+2*dtmfGapPackets {
		t.Errorf("%d audio packets, want %d", audioPTs, leadPackets+2*dtmfGapPackets)
	}
	if _, _, err := dtmfRTP("1x"); err == nil {
		t.Error("a digit that is no DTMF was accepted")
	}
}

// The capture holds each payload in an Ethernet/IPv4/UDP frame with a valid IP
// checksum, one step apart.
func TestPcapHoldsThePayloads(t *testing.T) {
	payloads := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{7}, 300)}
	raw := pcapOf(payloads, 20*time.Millisecond)
	if binary.LittleEndian.Uint32(raw) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(raw[20:]) != 1 {
		t.Fatalf("global header % x", raw[:24])
	}
	rest := raw[24:]
	for i, want := range payloads {
		sec, usec := binary.LittleEndian.Uint32(rest), binary.LittleEndian.Uint32(rest[4:])
		n := int(binary.LittleEndian.Uint32(rest[8:]))
		frame := rest[16 : 16+n]
		rest = rest[16+n:]
		if at := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond; at != time.Duration(i)*20*time.Millisecond {
			t.Errorf("packet %d at %v", i, at)
		}
		ip := frame[14:34]
		var sum uint32
		for j := 0; j < len(ip); j += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[j:]))
		}
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		if sum != 0xffff {
			t.Errorf("packet %d: IP header checksum does not verify (%#x)", i, sum)
		}
		if got := frame[42:]; !bytes.Equal(got, want) {
			t.Errorf("packet %d payload %q, want %q", i, got, want)
		}
	}
	if len(rest) != 0 {
		t.Errorf("%d bytes after the last packet", len(rest))
	}
}

func TestReadNetstring(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"5:hello,", "hello", true},
		{"0:,", "", true},
		{"5:hello;", "", false},
		{"-1:x,", "", false},
		{"999999999:x,", "", false},
		{"abc:x,", "", false},
		{"5:hel", "", false},
	} {
		got, err := readNetstring(bufio.NewReader(strings.NewReader(tc.in)))
		if (err == nil) != tc.ok || string(got) != tc.want {
			t.Errorf("readNetstring(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzReadNetstring(f *testing.F) {
	for _, s := range []string{"5:hello,", "0:,", "12:{\"event\":1},", "3:ab", "99999999:"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readNetstring(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		// what was accepted is the body between the first colon and the closing comma
		i := bytes.IndexByte(in, ':')
		end := i + 1 + len(got)
		if i < 0 || end >= len(in) || !bytes.Equal(in[i+1:end], got) || in[end] != ',' || len(got) > maxNetstring {
			t.Errorf("accepted %q from %q", got, in)
		}
	})
}

func TestParseStats(t *testing.T) {
	header := "StartTime;SuccessfulCall(P);SuccessfulCall(C);FailedCall(P);FailedCall(C);\n"
	ok, failed, err := parseStats("s", []byte(header+"a;0;1;0;0;\nb;1;3;0;2;\n"))
	if err != nil || ok != 3 || failed != 2 {
		t.Errorf("parseStats = %d, %d, %v; want the last row's cumulative 3 and 2", ok, failed, err)
	}
	for _, bad := range []string{"", header, "StartTime;\nx;\n", header + "a;x;y;z;w;\n"} {
		if _, _, err := parseStats("s", []byte(bad)); err == nil {
			t.Errorf("parseStats(%q) accepted it", bad)
		}
	}
}

func TestBaresipAccount(t *testing.T) {
	got, err := baresipAccount(BaresipOptions{User: "alice", Password: "pw", Registrar: "127.0.0.1:5060", AutoAnswer: true}, "127.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<sip:alice@handset.test>;", "auth_user=alice", "auth_pass=pw", `outbound="sip:127.0.0.1:5060;transport=udp"`, "answermode=auto", "audio_codecs=PCMU,PCMA"} {
		if !strings.Contains(got, want) {
			t.Errorf("account %q lacks %q", got, want)
		}
	}
	direct, err := baresipAccount(BaresipOptions{User: "bob"}, "127.0.0.1:7000")
	if err != nil || !strings.HasPrefix(direct, "<sip:bob@127.0.0.1:7000>;") || !strings.Contains(direct, "regint=0") {
		t.Errorf("unregistered account %q, %v", direct, err)
	}
	for _, bad := range []BaresipOptions{
		{User: "a;b"}, {User: "a", Password: "p>w"}, {User: "a", Codecs: []string{"opus"}}, {User: "a", Transport: "sctp"},
		{User: "a", Registrar: "127.0.0.1:1\nmodule x"},
	} {
		if got, err := baresipAccount(bad, "127.0.0.1:7000"); err == nil {
			t.Errorf("%+v accepted: %q", bad, got)
		}
	}
}

func TestKamailioOptionsRefuseWhatTheConfigCannotHold(t *testing.T) {
	good := KamailioOptions{Users: map[string]string{"alice": "s3cret"}, Target: "127.0.0.1:5080"}
	o, err := good.checked()
	if err != nil || o.Realm != defaultRealm {
		t.Fatalf("checked() = %+v, %v", o, err)
	}
	cfg := kamailioConfig(o, 5999)
	for _, want := range []string{`if ($au == "alice") { $var(password) = "s3cret"; return 1; }`, `$du = "sip:127.0.0.1:5080";`, "listen=udp:127.0.0.1:5999", `alias="handset.test"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	if strings.Contains(cfg, "{{") {
		t.Error("config has unfilled fields")
	}
	for _, bad := range []KamailioOptions{
		{Users: map[string]string{`a"; exit; "`: "x"}},
		{Users: map[string]string{"a": "p w"}},
		{Realm: "a b"},
		{Target: `127.0.0.1:1"; xlog("x`},
		{Target: "nowhere"},
	} {
		if _, err := bad.checked(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestMalformedMessagesFitADatagram(t *testing.T) {
	junk := MalformedMessages("127.0.0.1:5060")
	if len(junk) < 20 {
		t.Errorf("%d messages, want at least 20", len(junk))
	}
	names := map[string]bool{}
	for _, j := range junk {
		if len(j.Packet) > 65507 {
			t.Errorf("%s: %d bytes do not fit a UDP datagram", j.Name, len(j.Packet))
		}
		if names[j.Name] {
			t.Errorf("two messages named %q", j.Name)
		}
		names[j.Name] = true
	}
}

// Exchange returns the reply a UDP server sends, and nil when none comes in time.
func TestExchange(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if !bytes.HasPrefix(buf[:n], []byte("silent")) {
				_, _ = pc.WriteTo(append([]byte("re: "), buf[:n]...), from)
			}
		}
	}()
	ctx := context.Background()
	got, err := Exchange(ctx, "udp", pc.LocalAddr().String(), []byte("ping"), 5*time.Second)
	if err != nil || string(got) != "re: ping" {
		t.Errorf("Exchange = %q, %v; want the echo", got, err)
	}
	got, err = Exchange(ctx, "udp", pc.LocalAddr().String(), []byte("silent"), 50*time.Millisecond)
	if err != nil || got != nil {
		t.Errorf("Exchange with no reply = %q, %v; want nil, nil", got, err)
	}
	if _, err := Exchange(ctx, "sctp", pc.LocalAddr().String(), nil, time.Second); err == nil {
		t.Error("Exchange over sctp did not fail")
	}
}

// A start whose port was taken first is tried again, at most portAttempts times; any
// other failure ends the tries at once.
func TestOnFreePortsTriesAgainOnlyForATakenPort(t *testing.T) {
	taken := portTaken(errors.New("sipp exited"), "Unable to bind main socket, errno = 98 (Address already in use)")
	other := portTaken(errors.New("sipp exited"), "Unknown option -zz")
	if !errors.Is(taken, errPortTaken) || errors.Is(other, errPortTaken) {
		t.Fatalf("portTaken marked %v and %v", taken, other)
	}
	for _, tc := range []struct {
		name      string
		failures  []error
		wantCalls int
		wantErr   error
	}{
		{"taken twice, then started", []error{taken, taken}, 3, nil},
		{"another failure", []error{other}, 1, other},
		{"always taken", []error{taken, taken, taken, taken, taken, taken}, portAttempts, errPortTaken},
	} {
		calls := 0
		_, err := onFreePorts(func() (int, error) {
			calls++
			if calls <= len(tc.failures) {
				return 0, tc.failures[calls-1]
			}
			return calls, nil
		})
		if calls != tc.wantCalls || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %d calls, error %v; want %d calls, error %v", tc.name, calls, err, tc.wantCalls, tc.wantErr)
		}
	}
}
