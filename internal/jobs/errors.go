package jobs

import (
	"errors"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

// permanent marks an error that another attempt cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so the job fails at once instead of being retried: bad input, a
// refused request, a number nobody may call.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err: err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// retryAfter asks for the next attempt no sooner than after.
type retryAfter struct {
	err   error
	after time.Duration
}

func (r retryAfter) Error() string { return r.err.Error() }
func (r retryAfter) Unwrap() error { return r.err }

// RetryAfter wraps err so the next attempt (if any is left) waits at least d: a callee
// who was busy is called again in minutes, not seconds.
func RetryAfter(err error, d time.Duration) error { return retryAfter{err: err, after: d} }

// retryDelay is the wait before the next attempt after attempt n failed with err.
func retryDelay(err error, n int) time.Duration {
	d := store.Backoff(n)
	var ra retryAfter
	if errors.As(err, &ra) && ra.after > d {
		d = ra.after
	}
	return d
}
