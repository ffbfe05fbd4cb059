package carrier

import "errors"

// What went wrong, for errors.Is on a Carrier's errors: callers decide from these whether
// to retry, to give up, or what to tell the operator.
var (
	// ErrInvalid: Handset refused the request before sending it (a malformed number, a
	// missing URL); nothing reached the carrier.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: the account has no such call or number.
	ErrNotFound = errors.New("not found")
	// ErrRejected: the carrier refused the request as it stands (an unverified caller id,
	// a number it cannot dial, a call no longer in progress); retrying will not help.
	ErrRejected = errors.New("rejected by the carrier")
	// ErrAuth: the carrier refused the credentials.
	ErrAuth = errors.New("the carrier refused the credentials")
	// ErrUnreachable: no answer, a transport failure, a server error or a rate limit;
	// the same request may work later.
	ErrUnreachable = errors.New("carrier unreachable")
)

// Error is a carrier's error with its class (one of the Err… values) attached, keeping
// the carrier's own error (a *voice.ProviderError, say) for errors.As.
type Error struct {
	Class error
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap gives errors.Is and errors.As both the class and the carrier's error.
func (e *Error) Unwrap() []error { return []error{e.Class, e.Err} }

// Classify wraps err in an *Error of class; nil stays nil.
func Classify(class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: class, Err: err}
}

// Permanent reports whether another attempt at the same request cannot succeed: it was
// invalid, rejected, unauthorised or named something that does not exist.
func Permanent(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrRejected) || errors.Is(err, ErrAuth) || errors.Is(err, ErrNotFound)
}
