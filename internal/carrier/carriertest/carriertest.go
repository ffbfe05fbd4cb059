// Package carriertest is the conformance suite of the carrier contract: every carrier
// (internal/carrier/twilio, …) runs Run against a fake of its vendor's API, so jobs,
// transfers, number management and doctor can rely on any of them alike. Run places calls
// and follows their statuses, hangs up, transfers, lists and attaches numbers, and checks
// that failures (bad credentials, unknown numbers, server errors, an unreachable API,
// malformed input) are classified the same way, and that nothing is left running after.
package carriertest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/carrier"
)

// Account is what the carrier account under test holds, and how the people it calls
// behave.
type Account struct {
	// Numbers are the account's phone numbers, in E.164.
	Numbers []string
	// Callees says how each called number behaves; a number not here is a person who
	// answers at once and stays on the line until the call is hung up.
	Callees map[string]Callee
}

// Callee is how one called number behaves.
type Callee struct {
	Answer Answer
	// RingFor is how long it rings before Answer happens; 0 is a moment.
	RingFor time.Duration
}

// Answer is what a called number does once it has rung.
type Answer string

// Answers; the zero value is a person.
const (
	AnswerPerson  Answer = ""        // a person picks up and stays until hung up
	AnswerMachine Answer = "machine" // an answering machine picks up
	AnswerBusy    Answer = "busy"    // the line is busy
	AnswerNobody  Answer = "nobody"  // it rings until the ring timeout
	AnswerFailed  Answer = "failed"  // the carrier cannot connect it
)

// Fault is a failure of the vendor's API the factory arranges.
type Fault string

// Faults; the zero value is none.
const (
	FaultNone        Fault = ""
	FaultAuth        Fault = "auth"        // the credentials are wrong: every request is refused
	FaultServer      Fault = "server"      // every request answers a server error (5xx)
	FaultUnreachable Fault = "unreachable" // nothing listens where the API should be
)

// Env is a carrier under test and what the test may see of its vendor's side.
type Env struct {
	Carrier carrier.Carrier
	// PublicURL is Handset's address for Dial. The factory serves there what the carrier
	// asks of Handset during a call: to keep an answered call on the line.
	PublicURL string
	// WaitFor blocks until call ref, as the vendor holds it, has status want or has
	// ended; it returns an error when ctx ends first. It waits on the vendor's own
	// events, not on a timer.
	WaitFor func(ctx context.Context, ref string, want carrier.Status) error
	// TransferredTo is the number the vendor connected call ref to; "" if none.
	TransferredTo func(ref string) string
	// Requests is how many requests have reached the vendor's API so far.
	Requests func() int
	// OneWebhook: the carrier sends every event of a number's calls to one URL (Telnyx's
	// application webhook), so Attach is given the same URL for voice and status.
	OneWebhook bool
}

// Factory builds a carrier against a fake of its vendor holding a, failing as f says. It
// registers its own cleanup with t.
type Factory func(t *testing.T, a Account, f Fault) Env

// Numbers of the account every test uses.
const (
	ourNumber   = "+14155550100"
	otherNumber = "+14155550111"
	notOurs     = "+14155550199"
)

// Callees of the calls the tests place.
const (
	person  = "+15550102000"
	machine = "+15550102001"
	busy    = "+15550102002"
	nobody  = "+15550102003"
	broken  = "+15550102004"
	agent   = "+15550103000" // where transfers go
)

func account() Account {
	return Account{
		Numbers: []string{ourNumber, otherNumber},
		Callees: map[string]Callee{
			machine: {Answer: AnswerMachine},
			busy:    {Answer: AnswerBusy},
			nobody:  {Answer: AnswerNobody, RingFor: time.Hour},
			broken:  {Answer: AnswerFailed},
		},
	}
}

// Run runs the suite against the carrier newCarrier builds.
func Run(t *testing.T, newCarrier Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"Name", testName},
		{"DialAnsweredMovesToInProgress", testDialAnswered},
		{"HangupEndsCompleted", testHangup},
		{"HangupOfEndedCallIsDone", testHangupEnded},
		{"Busy", testBusy},
		{"RingTimeoutIsNoAnswer", testRingTimeout},
		{"Failed", testFailed},
		{"MachineDetection", testMachineDetection},
		{"NoDetectionWhenTalking", testNoDetection},
		{"Transfer", testTransfer},
		{"TransferOfEndedCallRejected", testTransferEnded},
		{"FromNotOnAccountRejected", testFromNotOurs},
		{"MalformedInputSendsNothing", testMalformed},
		{"Account", testAccount},
		{"NumbersListed", testNumbers},
		{"NumberFound", testNumberFound},
		{"UnknownNumberNotFound", testUnknownNumber},
		{"Attach", testAttach},
		{"AuthFailure", testAuth},
		{"ServerError", testServerError},
		{"Unreachable", testUnreachable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Registered first, so it runs after the factory's own cleanup.
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			tc.fn(t, newCarrier)
		})
	}
}

// wait bounds every wait: generous, since a loaded machine may be slow.
const wait = 30 * time.Second

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}
