package plivo

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// ServeTransfer answers Plivo's fetch of a transferred call's new XML (TransferPath):
// the <Dial> to the number named in the URL Control.Transfer gave Plivo. The number is
// trusted because V3 signs the URL with its query: only a URL Plivo was told to fetch
// carries a valid signature. Unsigned, replayed or malformed fetches are refused.
func ServeTransfer(v Verifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodGet {
			w.Header().Set("Allow", "POST, GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch err := v.Verify(w, r); {
		case errors.Is(err, mediastream.ErrMemoryUnavailable):
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		q := r.URL.Query()
		to, err := carrier.NormalizeNumber(q.Get(ToParam))
		callerID := q.Get(CallerIDParam)
		if err == nil && callerID != "" {
			callerID, err = carrier.NormalizeNumber(callerID)
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("bad transfer: %v", err), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(DialXML(to, callerID))
	})
}
