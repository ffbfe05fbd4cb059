package sippeer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// BaresipOptions configure a baresip user agent.
type BaresipOptions struct {
	// Dir holds its config, the control socket's state and recordings; t.TempDir() when empty.
	Dir string
	// Source is the WAV it plays to the far end of every call: mono 16-bit PCM at the
	// rate of the codec the call settles on (8 kHz for G.711, 16 kHz for G.722; baresip
	// fails the call otherwise). WriteSpeechWAV makes one. Required.
	Source string
	// User is the user part of its address of record; "baresip" when empty.
	User string
	// Registrar, when set ("host:port"), is where it REGISTERs with AuthUser and Password
	// (digest), as User@Domain; calls then go through it as the outbound proxy.
	Registrar string
	// Domain is the domain of its address of record when it registers; "handset.test"
	// when empty (kamailio's default realm).
	Domain string
	// AuthUser and Password answer digest challenges; AuthUser defaults to User.
	AuthUser, Password string
	// Transport is "udp" (the default), "tcp" or "tls": how it reaches the registrar.
	// Dial takes a URI, which may say ;transport=tcp or ;transport=tls itself.
	Transport string
	// SRTP makes it offer and demand SRTP with keys in the SDP (SDES, a=crypto): a call
	// without it fails.
	SRTP bool
	// TLSCert and TLSKey (PEM files, WriteTestCertificate) give it a TLS listener, on
	// the port after its SIP port (TLSAddr).
	TLSCert, TLSKey string
	// CAFile (PEM) is the certificate it trusts when it calls a TLS listener.
	CAFile string
	// Codecs are the audio codecs offered, in order: PCMU, PCMA, G722 (wideband, 16
	// kHz); PCMU and PCMA when empty.
	Codecs []string
	// AutoAnswer answers incoming calls at once.
	AutoAnswer bool
}

// An Event is one thing baresip reported on its control socket, as it arrived.
type Event struct {
	// At is when the event was read from the control socket: baresip stamps none, so
	// this is good to a millisecond or so, and events sent together share a time.
	At    time.Time
	Class string // "call", "register", ...
	Type  string // "CALL_ESTABLISHED", "CALL_CLOSED", "REGISTER_OK", "CALL_DTMF_START", ...
	Param string // the detail baresip gave: a reason, a status line, a DTMF digit
	Peer  string // the far end's URI, for call events
}

// Baresip is a running baresip.
type Baresip struct {
	proc         *process
	addr, recDir string
	tlsAddr      string
	user         string
	ctrl         *baresipControl
}

// baresipStart bounds how long baresip may take to load its modules and open its
// control socket.
const baresipStart = 15 * time.Second

// StartBaresip starts baresip with a generated config: no sound card (audio comes from
// Source, what it hears is recorded by the sndfile module), the ctrl_tcp control socket on
// a free loopback port, SIP on another. It is stopped when t ends.
func StartBaresip(t testing.TB, opts BaresipOptions) (*Baresip, error) {
	t.Helper()
	bin := testpeer.Program(t, "baresip", testpeer.Baresip)
	if opts.Source == "" {
		return nil, errors.New("baresip: no Source audio")
	}
	source, err := filepath.Abs(opts.Source)
	if err != nil {
		return nil, err
	}
	opts.Source = source
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.User == "" {
		opts.User = "baresip"
	}
	return onFreePorts(func() (*Baresip, error) { return startBaresipOnce(t, bin, opts) })
}

// startBaresipOnce starts baresip on newly chosen free ports.
func startBaresipOnce(t testing.TB, bin string, opts BaresipOptions) (*Baresip, error) {
	// baresip's TLS listener takes the port after its SIP port: that one must be free too
	ports, err := freePortsWithNext(2)
	if err != nil {
		return nil, err
	}
	rtpPort, err := freeMediaPort() // bound only when a call starts: see mediaLow
	if err != nil {
		return nil, err
	}
	b := &Baresip{addr: loopback(ports[0]), tlsAddr: loopback(ports[0] + 1), recDir: filepath.Join(opts.Dir, "recordings"), user: opts.User}
	if err := os.MkdirAll(b.recDir, 0o755); err != nil {
		return nil, err
	}
	account, err := baresipAccount(opts, b.addr)
	if err != nil {
		return nil, err
	}
	tlsLines, err := baresipTLS(opts)
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		"config": baresipConfig(opts, b.addr, rtpPort, ports[1], b.recDir) + tlsLines,
		// the account is created by command once the control socket is connected (Start),
		// so that no registration event goes out before anyone listens
		"accounts": "",
		"contacts": "",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(opts.Dir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	ready := make(chan struct{})
	var once sync.Once
	lines := func(line []byte) {
		if strings.Contains(string(line), "baresip is ready") {
			once.Do(func() { close(ready) })
		}
	}
	if b.proc, err = startProcessWatching(t, bin, []string{"-f", opts.Dir}, opts.Dir, lines); err != nil {
		return nil, err
	}
	select {
	case <-ready:
	case <-b.proc.done:
		return nil, portTaken(fmt.Errorf("baresip exited at start: %v\n%s", b.proc.err, b.proc.out), b.proc.out.String())
	case <-time.After(baresipStart):
		b.proc.kill()
		return nil, fmt.Errorf("baresip not ready within %v:\n%s", baresipStart, b.proc.out)
	}
	if b.ctrl, err = dialBaresipControl(loopback(ports[1])); err != nil {
		b.proc.kill()
		return nil, portTaken(fmt.Errorf("baresip control socket: %w\n%s", err, b.proc.out), b.proc.out.String())
	}
	t.Cleanup(func() { _ = b.Stop() })
	if err := b.ctrl.command("uanew", account); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, b.proc.out)
	}
	return b, nil
}

// baresipConfig is the config file: what it loads and where it listens.
func baresipConfig(opts BaresipOptions, sipAddr string, rtpPort, ctrlPort int, recDir string) string {
	lines := [][2]string{
		{"poll_method", "epoll"},
		{"sip_listen", sipAddr},
		{"net_interface", "127.0.0.1"},
		{"audio_source", "aufile," + opts.Source},
		{"audio_alert", "none,none"},
		{"audio_level", "no"},
		// RTP on ports of its own (an even port and the RTCP one after it)
		{"rtp_ports", fmt.Sprintf("%d-%d", rtpPort, rtpPort+1)},
		{"rtp_timeout", "0"},
		{"module_path", "/usr/lib/baresip/modules"},
		{"module", "g711.so"},
		{"module", "g722.so"},
		{"module", "aufile.so"},
		// sndfile records each call's decoded audio (what it heard) and encoded audio
		{"module", "sndfile.so"},
		{"snd_path", recDir},
		{"module_app", "account.so"},
		// menu provides the dial and hangup commands the control socket runs
		{"module_app", "menu.so"},
		{"module_app", "ctrl_tcp.so"},
		{"ctrl_tcp_listen", loopback(ctrlPort)},
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s\t\t%s\n", l[0], l[1])
	}
	return b.String()
}

// baresipAccount is the accounts line: its address of record and how it registers.
func baresipAccount(opts BaresipOptions, sipAddr string) (string, error) {
	codecs := opts.Codecs
	if len(codecs) == 0 {
		codecs = []string{"PCMU", "PCMA"}
	}
	for _, c := range codecs {
		if c != "PCMU" && c != "PCMA" && c != "G722" {
			return "", fmt.Errorf("baresip codec %q: this harness loads G.711 (PCMU, PCMA) and G.722 (G722)", c)
		}
	}
	transport := opts.Transport
	if transport == "" {
		transport = "udp"
	}
	if transport != "udp" && transport != "tcp" && transport != "tls" {
		return "", fmt.Errorf("baresip: transport %q: want udp, tcp or tls", transport)
	}
	names := make([]string, len(codecs))
	for i, c := range codecs {
		names[i] = c
		if c == "G722" {
			names[i] = "G722/16000/1" // baresip's name for it: 16 kHz audio (on an 8 kHz RTP clock)
		}
	}
	params := []string{"audio_codecs=" + strings.Join(names, ",")}
	if opts.SRTP {
		params = append(params, "mediaenc=srtp-mand")
	}
	if opts.AutoAnswer {
		params = append(params, "answermode=auto")
	}
	aor := fmt.Sprintf("sip:%s@%s", opts.User, sipAddr)
	if opts.Registrar == "" {
		params = append(params, "regint=0")
	} else {
		domain := opts.Domain
		if domain == "" {
			domain = defaultRealm
		}
		authUser := opts.AuthUser
		if authUser == "" {
			authUser = opts.User
		}
		aor = fmt.Sprintf("sip:%s@%s", opts.User, domain)
		params = append(params, "regint=3600", "auth_user="+authUser, "auth_pass="+opts.Password,
			fmt.Sprintf(`outbound="sip:%s;transport=%s"`, opts.Registrar, transport))
	}
	for _, field := range []string{opts.User, opts.AuthUser, opts.Password, opts.Domain, opts.Registrar} {
		if strings.ContainsAny(field, ";<>\" \t\r\n") {
			return "", fmt.Errorf("baresip account: %q may not hold ; < > quotes or spaces", field)
		}
	}
	return "<" + aor + ">;" + strings.Join(params, ";"), nil
}

// baresipTLS is the config's TLS lines: its certificate and key (baresip takes them in
// one file, written into opts.Dir) and the CA it trusts; the srtp module when asked.
func baresipTLS(opts BaresipOptions) (string, error) {
	var b strings.Builder
	if opts.SRTP {
		b.WriteString("module\t\tsrtp.so\n")
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return "", errors.New("baresip: TLSCert and TLSKey come together")
	}
	if opts.TLSCert != "" {
		var both []byte
		for _, f := range []string{opts.TLSCert, opts.TLSKey} {
			pem, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("baresip TLS: %w", err)
			}
			both = append(append(both, pem...), '\n')
		}
		combined := filepath.Join(opts.Dir, "tls.pem")
		if err := os.WriteFile(combined, both, 0o600); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "sip_certificate\t\t%s\n", combined)
	}
	if opts.CAFile != "" {
		ca, err := filepath.Abs(opts.CAFile)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "sip_cafile\t\t%s\n", ca)
	}
	return b.String(), nil
}

// Addr is the "127.0.0.1:port" its SIP socket listens on.
func (b *Baresip) Addr() string { return b.addr }

// TLSAddr is the "127.0.0.1:port" of its TLS listener, when it has TLSCert.
func (b *Baresip) TLSAddr() string { return b.tlsAddr }

// URI is its own SIP URI, for a peer that calls it directly.
func (b *Baresip) URI() string { return "sip:" + b.user + "@" + b.addr }

// Dial calls uri ("sip:handset@127.0.0.1:5080").
func (b *Baresip) Dial(uri string) error {
	if strings.ContainsAny(uri, " \r\n") {
		return fmt.Errorf("baresip dial %q: a URI has no spaces or line breaks", uri)
	}
	return b.ctrl.command("dial", uri)
}

// Hangup ends the current call.
func (b *Baresip) Hangup() error { return b.ctrl.command("hangup", "") }

// WaitRegistered waits for the registrar's answer: nil for REGISTER_OK, an error naming
// the failure for REGISTER_FAIL.
func (b *Baresip) WaitRegistered(ctx context.Context) error {
	ev, err := b.ctrl.wait(ctx, "REGISTER_OK", "REGISTER_FAIL")
	if err == nil && ev.Type == "REGISTER_FAIL" {
		err = fmt.Errorf("baresip registration failed: %s", ev.Param)
	}
	return err
}

// WaitEstablished waits for a call to be answered and returns the event; a call that
// closes first is an error naming why.
func (b *Baresip) WaitEstablished(ctx context.Context) (Event, error) {
	ev, err := b.ctrl.wait(ctx, "CALL_ESTABLISHED", "CALL_CLOSED")
	if err == nil && ev.Type == "CALL_CLOSED" {
		err = fmt.Errorf("baresip call closed before it was established: %s", ev.Param)
	}
	return ev, err
}

// WaitClosed waits for the call to end and returns the event.
func (b *Baresip) WaitClosed(ctx context.Context) (Event, error) {
	return b.ctrl.wait(ctx, "CALL_CLOSED")
}

// WaitDTMF waits for the far end's next DTMF digit (RFC 4733 telephone events) and
// returns it.
func (b *Baresip) WaitDTMF(ctx context.Context) (string, error) {
	ev, err := b.ctrl.wait(ctx, "CALL_DTMF_START")
	return ev.Param, err
}

// AnswerToFirstRTP is, for the last call established, the time from baresip learning
// of the answer (CALL_ESTABLISHED: the 200 OK of a call it placed, the ACK of one it
// took) to the first RTP packet it received (CALL_RTPESTAB); negative when audio came
// first. It is how long a caller waits for the greeting. The error says which of the two
// events is missing.
func (b *Baresip) AnswerToFirstRTP() (time.Duration, error) {
	var answered, firstRTP time.Time
	for _, ev := range b.Events() {
		switch ev.Type {
		case "CALL_OUTGOING", "CALL_INCOMING", "CALL_LOCAL_SDP":
			if ev.Type != "CALL_LOCAL_SDP" || ev.Param == "offer" {
				answered, firstRTP = time.Time{}, time.Time{} // a new call: its own times
			}
		case "CALL_ESTABLISHED":
			answered = ev.At
		case "CALL_RTPESTAB":
			// Audio may come before the answer is read: a far end whose RTP flows from
			// its 200 OK on.
			if firstRTP.IsZero() {
				firstRTP = ev.At
			}
		}
	}
	switch {
	case answered.IsZero():
		return 0, errors.New("baresip: no call was established")
	case firstRTP.IsZero():
		return 0, errors.New("baresip: no RTP arrived on the established call")
	}
	return firstRTP.Sub(answered), nil
}

// Events are the events so far, in order.
func (b *Baresip) Events() []Event { return b.ctrl.all() }

// Recording is the WAV of what it heard on its last call (16-bit PCM at the codec's
// rate, written by sndfile while the call runs, complete once the call is closed).
func (b *Baresip) Recording() (string, error) {
	heard, err := filepath.Glob(filepath.Join(b.recDir, "dump-*-dec.wav"))
	if err != nil || len(heard) == 0 {
		return "", fmt.Errorf("baresip recorded no call in %s (%v)", b.recDir, err)
	}
	slices.Sort(heard) // the names start with the call's start time
	return heard[len(heard)-1], nil
}

// Log is what baresip printed so far.
func (b *Baresip) Log() string { return b.proc.out.String() }

// baresipGrace is how long baresip has to exit after SIGTERM. A registered baresip
// lingers for seconds unregistering; its recordings are complete once a call closes,
// so it is killed rather than waited for.
const baresipGrace = time.Second

// Stop ends baresip (it is stopped when t ends anyway). A call still up is hung up
// first, so its recording is complete.
func (b *Baresip) Stop() error {
	if b.proc.exited() {
		return nil
	}
	if b.inCall() {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		defer cancel()
		if err := b.Hangup(); err == nil {
			_, _ = b.ctrl.wait(ctx, "CALL_CLOSED")
		}
	}
	b.ctrl.close()
	_ = b.proc.stop(baresipGrace) // killed past the grace: nothing is lost
	return nil
}

// inCall reports whether a call has been established and not closed since.
func (b *Baresip) inCall() bool {
	up := false
	for _, ev := range b.Events() {
		switch ev.Type {
		case "CALL_ESTABLISHED":
			up = true
		case "CALL_CLOSED":
			up = false
		}
	}
	return up
}
