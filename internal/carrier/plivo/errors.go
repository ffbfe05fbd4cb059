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
	return carrier.ClassifyProvider(err, func(err error) bool { return errors.Is(err, ErrNumberNotFound) })
}

// notFound reports whether err is Plivo's 404: the call, request or number is not (or no
// longer) there.
func notFound(err error) bool {
	var pe *voice.ProviderError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound
}
