package cli

import (
	"strings"
	"testing"
)

// TestStartLogIsOneLinePerEvent: the start-up note that this node places no outbound calls
// (which the demo shows too) lists what is missing on one line, with no escaped newlines.
func TestStartLogIsOneLinePerEvent(t *testing.T) {
	r := startServe(t, nil, "HANDSET_PHONE_NUMBER=", "HANDSET_PUBLIC_URL=")
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(line, "does not place outbound calls") {
			if strings.Contains(line, `\n`) || !strings.Contains(line, "HANDSET_PHONE_NUMBER") || !strings.Contains(line, "; set HANDSET_PUBLIC_URL") {
				t.Errorf("log line %s", line)
			}
			return
		}
	}
	t.Errorf("no note about outbound calls in:\n%s", r.logs.String())
}
