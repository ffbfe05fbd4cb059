package carrier

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

func TestStatusEnded(t *testing.T) {
	for s, want := range map[Status]bool{
		StatusQueued: false, StatusRinging: false, StatusInProgress: false,
		StatusCompleted: true, StatusBusy: true, StatusNoAnswer: true, StatusFailed: true, StatusCanceled: true,
		"": false, "initiated": false,
	} {
		if s.Ended() != want {
			t.Errorf("%q.Ended() = %v", s, !want)
		}
	}
}

func TestAnsweredByMachine(t *testing.T) {
	for a, want := range map[AnsweredBy]bool{
		AnsweredHuman: false, AnsweredUnknown: false, "": false,
		AnsweredMachine: true, AnsweredBeep: true, AnsweredSilence: true, AnsweredOther: true, AnsweredFax: true,
	} {
		if a.Machine() != want {
			t.Errorf("%q.Machine() = %v", a, !want)
		}
		// The call engine reads the same verdict from the leg: both must agree.
		if leg := (voice.LegInfo{AnsweredBy: string(a)}).Machine(); leg != want {
			t.Errorf("voice.LegInfo with %q: Machine() = %v, carrier says %v", a, leg, want)
		}
	}
}

func TestMachinePolicyValid(t *testing.T) {
	for p, want := range map[MachinePolicy]bool{"": true, MachineHangup: true, MachineMessage: true, MachineTalk: true, "sing": false, "Hangup": false} {
		if p.Valid() != want {
			t.Errorf("%q.Valid() = %v", p, !want)
		}
	}
}

func TestClassify(t *testing.T) {
	if Classify(ErrAuth, nil) != nil {
		t.Error("Classify of no error is an error")
	}
	cause := &voice.ProviderError{Provider: "acme", Op: "dial", Kind: voice.KindAuth, Status: 401, Err: errors.New("bad key")}
	err := fmt.Errorf("place call: %w", Classify(ErrAuth, cause))
	var pe *voice.ProviderError
	switch {
	case !errors.Is(err, ErrAuth) || errors.Is(err, ErrRejected):
		t.Errorf("class lost or wrong: %v", err)
	case !errors.As(err, &pe) || pe != cause:
		t.Errorf("the carrier's own error is not reachable with errors.As: %v", err)
	case err.Error() != "place call: "+cause.Error():
		t.Errorf("message %q does not read as the carrier's", err)
	}
	for class, permanent := range map[error]bool{ErrInvalid: true, ErrNotFound: true, ErrRejected: true, ErrAuth: true, ErrUnreachable: false} {
		if got := Permanent(Classify(class, errors.New("x"))); got != permanent {
			t.Errorf("Permanent(%v) = %v", class, got)
		}
	}
	if Permanent(context.Canceled) {
		t.Error("a cancelled request counts as permanent")
	}
}
