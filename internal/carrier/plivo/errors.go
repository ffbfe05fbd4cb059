package plivo

import (
	"errors"
	"net/http"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// classify attaches the contract's class to a REST error, keeping the
// *voice.ProviderError (and the *APIError inside it) for errors.As. Plivo's error bodies
// carry no codes Handset relies on, so the HTTP status decides.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		return err // a cancelled context, say: not the carrier's doing
	}
	switch {
	case errors.Is(err, ErrNumberNotFound), pe.Status == http.StatusNotFound:
		return carrier.Classify(carrier.ErrNotFound, err)
	case pe.Kind == voice.KindAuth:
		return carrier.Classify(carrier.ErrAuth, err)
	case pe.Kind == voice.KindBadInput && pe.Status == 0:
		return carrier.Classify(carrier.ErrInvalid, err) // refused before sending
	case pe.Kind == voice.KindBadInput:
		return carrier.Classify(carrier.ErrRejected, err)
	case pe.Kind == voice.KindCanceled:
		return err
	}
	return carrier.Classify(carrier.ErrUnreachable, err)
}

// notFound reports whether err is Plivo's 404: the call, request or number is not (or no
// longer) there.
func notFound(err error) bool {
	var pe *voice.ProviderError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound
}
