package sippeer

import (
	"context"
	"testing"
	"time"
)

// Scenario names one of the sipp scenarios embedded in this package (scenarios/*.xml).
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
	// UACWaitBye places a call, streams SippOptions.Audio and waits for the far end to
	// hang up (the far end's BYE is answered 200).
	UACWaitBye Scenario = "uac_wait_bye"
	// UASAnswer answers one INVITE (180, then 200 with SDP), streams SippOptions.Audio
	// and waits for BYE.
	UASAnswer Scenario = "uas_answer"
	// UASDigest answers the first INVITE with a digest challenge (SippOptions.Challenge:
	// 401 or 407), checks the credentials on the second against SippOptions.Username and
	// Password, then answers as UASAnswer. Wrong credentials end the scenario failed.
	UASDigest Scenario = "uas_digest"
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
	// challenge with them; UASDigest expects them.
	Username, Password string
	// Challenge is the status UASDigest challenges with: 401 (the default) or 407.
	Challenge int
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

// Sipp is a running sipp process.
type Sipp struct{}

// StartSipp starts sipp playing scenario: a UAC calls target ("host:port"); a UAS ignores
// target and listens on Addr. The process is killed when t ends if still running.
// sipp cannot record the RTP it receives: use baresip (StartBaresip) to check what a far
// end heard.
func StartSipp(t testing.TB, scenario Scenario, target string, opts SippOptions) (*Sipp, error) {
	panic("not yet")
}

// Addr is the "127.0.0.1:port" sipp's SIP socket listens on.
func (s *Sipp) Addr() string { panic("not yet") }

// MediaAddr is the "127.0.0.1:port" sipp's RTP socket listens on.
func (s *Sipp) MediaAddr() string { panic("not yet") }

// Wait waits for sipp to exit (or ctx to end, which kills it) and reads its results. The
// error is for a run that could not be read back; failed calls are in the result.
func (s *Sipp) Wait(ctx context.Context) (SippResult, error) { panic("not yet") }

// RunSipp is StartSipp then Wait.
func RunSipp(ctx context.Context, t testing.TB, scenario Scenario, target string, opts SippOptions) (SippResult, error) {
	s, err := StartSipp(t, scenario, target, opts)
	if err != nil {
		return SippResult{}, err
	}
	return s.Wait(ctx)
}
