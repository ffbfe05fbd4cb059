package sippeer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Scenario names one of the sipp scenarios embedded in this package (scenarios/*.xml), or
// is the path of a scenario file of the caller's (ending in .xml), which may use the
// embedded blocks ({{template "invite" .}}, scenarios/common.tmpl). A scenario whose name
// starts "uac" places calls; any other answers them.
type Scenario string

// The scenarios. UAC scenarios call Target; UAS scenarios answer calls sent to Addr.
const (
	// UACCall places a call, streams SippOptions.Audio as RTP once answered, keeps the
	// call for SippOptions.Hold and hangs up with BYE.
	UACCall Scenario = "uac_call"
	// UACCancel places a call and CANCELs it after 180 Ringing, before it is answered;
	// the INVITE must end 487 Request Terminated.
	UACCancel Scenario = "uac_cancel"
	// UACReinvite places a call, re-INVITEs to put it on hold (a=sendonly), re-INVITEs
	// again to take it off hold (a=sendrecv), then hangs up.
	UACReinvite Scenario = "uac_reinvite"
	// UACDTMF places a call and sends SippOptions.Digits as RFC 4733 telephone-event RTP
	// packets (payload type 101), then hangs up.
	UACDTMF Scenario = "uac_dtmf"
	// UACInfoDTMF places a call and sends SippOptions.Digits as SIP INFO requests
	// (application/dtmf-relay), then hangs up.
	UACInfoDTMF Scenario = "uac_info_dtmf"
	// UACRefused places a call that must be refused 403 Forbidden, at once or after a
	// digest challenge it answers (with Username and Password); the 403 is acknowledged.
	// Any other answer fails the call: what a scanner, or a caller with wrong
	// credentials, must get from Handset.
	UACRefused Scenario = "uac_refused"
	// UACWaitBye places a call, streams SippOptions.Audio and waits for the far end to
	// hang up (the far end's BYE is answered 200).
	UACWaitBye Scenario = "uac_wait_bye"
	// UASAnswer answers one INVITE (180, then 200 with SDP), streams SippOptions.Audio
	// and waits for BYE. Like every scenario that waits for the far end to hang up, it
	// answers re-INVITEs (recvonly to a hold, sendrecv otherwise) and INFO meanwhile.
	UASAnswer Scenario = "uas_answer"
	// UASRing rings (180) without answering and waits for the caller to CANCEL; the
	// INVITE then ends 487 Request Terminated.
	UASRing Scenario = "uas_ring"
	// UASDigest answers the first INVITE with a 401 digest challenge, checks the
	// credentials on the second against SippOptions.Username and Password, then answers as UASAnswer. Wrong credentials are answered 403 Forbidden
	// and, once that is acknowledged, counted as a failed call.
	UASDigest Scenario = "uas_digest"
	// UASAcceptRefer answers as UASAnswer, then waits for a REFER (nothing else): it
	// accepts it 202, reports the transfer done with a NOTIFY (sipfrag SIP/2.0 200 OK),
	// and hangs up with BYE, as a trunk carrying out a blind transfer does.
	UASAcceptRefer Scenario = "uas_accept_refer"
	// UASRefuseRefer answers as UASAnswer, refuses a REFER with 603 Declined and waits for
	// BYE.
	UASRefuseRefer Scenario = "uas_refuse_refer"
)

// SippOptions tune a sipp run. The zero value of each field has a stated default.
type SippOptions struct {
	// Dir receives the scenario, the audio and sipp's logs; t.TempDir() when empty.
	Dir string
	// Transport is "udp" (the default) or "tcp".
	Transport string
	// Service is the user part of the request URI a UAC calls; "handset" when empty.
	Service string
	// Calls is how many calls a UAC places or a UAS answers before exiting; 1 when 0.
	Calls int
	// Audio is the WAV (8 kHz mu-law or A-law, mono) streamed once a call is answered;
	// a generated one-second 440 Hz mu-law tone when empty (WriteToneWAV).
	Audio string
	// Hold is how long a UAC keeps an answered call before hanging up; 2 s when 0.
	Hold time.Duration
	// Digits are the DTMF digits UACDTMF and UACInfoDTMF send: 0-9, *, #, A-D; "1" when empty.
	Digits string
	// Username and Password are the digest credentials: a UAC answers a 401 or 407
	// challenge with them; UASDigest expects them. (Sipp checks credentials only in an
	// Authorization header, so a 407 challenge, a proxy's, is kamailio's to make:
	// KamailioOptions.AuthInvites.)
	Username, Password string
	// Timeout bounds the whole run; 30 s when 0. Past it sipp is killed and Wait fails.
	Timeout time.Duration
}

// SippResult is what a finished sipp run reports.
type SippResult struct {
	// ExitCode is sipp's: 0 every call succeeded, 1 at least one failed, 97 stopped by
	// command, 99 ended without a call, 255 (-1) fatal error, 254 (-2) could not bind.
	ExitCode int
	// Successful and Failed count calls, from sipp's final statistics.
	Successful, Failed int
	// Messages is the message trace (-trace_msg): every SIP message sent and received.
	Messages string
	// Errors is the error trace (-trace_err): unexpected messages and failures.
	Errors string
	// Output is what sipp wrote to stdout and stderr.
	Output string
}

// sippStart bounds how long sipp may take to bind its SIP port.
const sippStart = 10 * time.Second

// Sipp is a running sipp process.
type Sipp struct {
	proc             *process
	addr, mediaAddr  string
	dir              string
	timeout          time.Duration
	messages, errors string // log file paths
	stats            string
}

// StartSipp starts sipp playing scenario: a UAC calls target ("host:port"); a UAS ignores
// target and listens on Addr, bound by the time StartSipp returns. The process is killed when t ends if still running.
// Sipp neither records nor counts the RTP it receives: use baresip (StartBaresip) to
// check what a far end heard.
func StartSipp(t testing.TB, scenario Scenario, target string, opts SippOptions) (*Sipp, error) {
	t.Helper()
	bin := testpeer.Program(t, "sipp", testpeer.Sipp)
	opts, err := opts.withDefaults(t)
	if err != nil {
		return nil, err
	}
	data, err := opts.scenarioData(scenario)
	if err != nil {
		return nil, err
	}
	if scenario == UACDTMF {
		if data.DTMFPcap, data.DTMFMS, err = writeDTMFPcap(filepath.Join(opts.Dir, "dtmf.pcap"), opts.Digits); err != nil {
			return nil, err
		}
	}
	xml, err := renderScenario(scenario, data)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(opts.Dir, strings.TrimSuffix(filepath.Base(string(scenario)), ".xml")+".xml")
	if err := os.WriteFile(file, xml, 0o644); err != nil {
		return nil, err
	}
	return onFreePorts(func() (*Sipp, error) {
		ports, err := freePorts(3)
		if err != nil {
			return nil, err
		}
		return startSippOn(t, bin, scenario, target, opts, file, ports)
	})
}

// startSippOn starts sipp with its SIP, media and control sockets on ports.
func startSippOn(t testing.TB, bin string, scenario Scenario, target string, opts SippOptions, file string, ports []int) (*Sipp, error) {
	var err error
	s := &Sipp{addr: loopback(ports[0]), mediaAddr: loopback(ports[1]), dir: opts.Dir, timeout: opts.Timeout,
		messages: filepath.Join(opts.Dir, "messages.log"), errors: filepath.Join(opts.Dir, "errors.log"),
		stats: filepath.Join(opts.Dir, "stats.csv")}
	args := []string{"-sf", file, "-i", "127.0.0.1", "-p", strconv.Itoa(ports[0]),
		"-mi", "127.0.0.1", "-mp", strconv.Itoa(ports[1]), "-cp", strconv.Itoa(ports[2]),
		"-t", map[string]string{"udp": "u1", "tcp": "t1"}[opts.Transport],
		"-m", strconv.Itoa(opts.Calls), "-s", opts.Service, "-aa", "-nostdin",
		"-timeout", fmt.Sprintf("%dms", opts.Timeout.Milliseconds()), "-timeout_error",
		"-trace_msg", "-message_file", s.messages, "-trace_err", "-error_file", s.errors,
		"-trace_stat", "-stf", s.stats, "-fd", "1",
		// a loaded test machine must not make sipp give up on its own scheduling
		"-watchdog_minor_threshold", "2000", "-watchdog_major_threshold", "10000",
		"-watchdog_minor_maxtriggers", "1000", "-watchdog_major_maxtriggers", "100"}
	if opts.Username != "" {
		args = append(args, "-au", opts.Username, "-ap", opts.Password)
	}
	if scenario.isUAC() {
		args = append([]string{target}, args...)
	}
	for _, stale := range []string{s.messages, s.errors, s.stats} {
		if err := os.Remove(stale); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if s.proc, err = startProcess(t, bin, args, opts.Dir); err != nil {
		return nil, err
	}
	if err := waitBound(s.proc, opts.Transport, ports[0], sippStart); err != nil {
		s.proc.kill()
		return nil, portTaken(fmt.Errorf("sipp: %w\n%s", err, s.proc.out), s.proc.out.String())
	}
	return s, nil
}

// withDefaults is o with every unset field given its default, and checked.
func (o SippOptions) withDefaults(t testing.TB) (SippOptions, error) {
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Transport == "" {
		o.Transport = "udp"
	}
	if o.Transport != "udp" && o.Transport != "tcp" {
		return o, fmt.Errorf("sipp: transport %q: want udp or tcp", o.Transport)
	}
	if o.Service == "" {
		o.Service = "handset"
	}
	if o.Calls == 0 {
		o.Calls = 1
	}
	if o.Hold == 0 {
		o.Hold = 2 * time.Second
	}
	if o.Digits == "" {
		o.Digits = "1"
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Audio == "" {
		o.Audio = filepath.Join(o.Dir, "tone.wav")
		if err := WriteToneWAV(o.Audio, audio.Format{Encoding: audio.Mulaw, Rate: 8000}, time.Second, 440); err != nil {
			return o, err
		}
	}
	return o, nil
}

// scenarioData is what o fills into a scenario. Sipp's rtp_stream sends a file's bytes
// as they are (it would send a WAV header as sound), so the samples of o.Audio are
// written to a raw file in o.Dir for it.
func (o SippOptions) scenarioData(scenario Scenario) (scenarioData, error) {
	f, samples, err := wav.ReadFile(o.Audio)
	if err != nil {
		return scenarioData{}, fmt.Errorf("sipp audio: %w", err)
	}
	pt, codec, err := codecFor(f)
	if err != nil {
		return scenarioData{}, fmt.Errorf("sipp audio %s: %w", o.Audio, err)
	}
	raw, err := filepath.Abs(filepath.Join(o.Dir, "audio."+strings.ToLower(codec)))
	if err != nil {
		return scenarioData{}, err
	}
	if err := os.WriteFile(raw, samples, 0o644); err != nil {
		return scenarioData{}, err
	}
	digits, err := splitDigits(o.Digits)
	if err != nil {
		return scenarioData{}, err
	}
	return scenarioData{Audio: raw, PayloadType: pt, Codec: codec, HoldMS: int(o.Hold.Milliseconds()),
		Digits: digits, Username: o.Username, Password: o.Password, Realm: "sippeer",
		RefuseRefer: scenario == UASRefuseRefer}, nil
}

// Addr is the "127.0.0.1:port" sipp's SIP socket listens on.
func (s *Sipp) Addr() string { return s.addr }

// MediaAddr is the "127.0.0.1:port" sipp's media (-mp) socket listens on.
func (s *Sipp) MediaAddr() string { return s.mediaAddr }

// Wait waits for sipp to exit (or ctx to end, or the run's Timeout and a grace period to
// pass, which kill it) and reads its results. The error is for a run that did not end by
// itself or could not be read back; failed calls are in the result.
func (s *Sipp) Wait(ctx context.Context) (SippResult, error) {
	var waitErr error
	select {
	case <-s.proc.done:
	case <-ctx.Done():
		s.proc.kill()
		waitErr = fmt.Errorf("sipp: %w", ctx.Err())
	case <-time.After(s.timeout + stopGrace):
		s.proc.kill()
		waitErr = fmt.Errorf("sipp: still running %v past its timeout; killed", stopGrace)
	}
	r := SippResult{ExitCode: s.proc.exitCode(), Output: s.proc.out.String(),
		Messages: readLog(s.messages), Errors: readLog(s.errors)}
	var err error
	if r.Successful, r.Failed, err = readStats(s.stats); err != nil && waitErr == nil {
		waitErr = err
	}
	return r, waitErr
}

// Stop ends sipp early (a UAS still waiting for calls); Wait then reads what it did.
func (s *Sipp) Stop() error { return s.proc.stop(stopGrace) }

// RunSipp is StartSipp then Wait.
func RunSipp(ctx context.Context, t testing.TB, scenario Scenario, target string, opts SippOptions) (SippResult, error) {
	t.Helper()
	s, err := StartSipp(t, scenario, target, opts)
	if err != nil {
		return SippResult{}, err
	}
	return s.Wait(ctx)
}
