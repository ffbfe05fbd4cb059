package dtmfinfo

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAcceptsEveryKeyInBothBodies(t *testing.T) {
	for _, k := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "#", "A", "B", "C", "D"} {
		got, err := Parse("application/dtmf-relay", []byte("Signal="+k+"\r\nDuration=160\r\n"))
		if err != nil || got != k {
			t.Errorf("dtmf-relay Signal=%s: got %q, %v", k, got, err)
		}
		got, err = Parse("application/dtmf", []byte(k))
		if err != nil || got != k {
			t.Errorf("dtmf %s: got %q, %v", k, got, err)
		}
	}
}

func TestParseReadsTheShapesPeersSend(t *testing.T) {
	cases := []struct {
		name, contentType, body, want string
	}{
		{"lower-case letter", "application/dtmf-relay", "Signal=b\r\nDuration=100\r\n", "B"},
		{"ten is star", "application/dtmf-relay", "Signal=10\r\nDuration=160\r\n", "*"},
		{"eleven is hash", "application/dtmf", "11", "#"},
		{"spaces around", "application/dtmf-relay", "Signal = 7 \r\nDuration= 250\r\n", "7"},
		{"bare newlines, duration first", "application/dtmf-relay", "Duration=160\nSignal=3\n", "3"},
		{"no final newline", "application/dtmf-relay", "Signal=9", "9"},
		{"header case and parameters", "Application/DTMF-Relay; charset=utf-8", "signal=4\r\n", "4"},
		{"dtmf body with newline", "application/dtmf", "6\r\n", "6"},
	}
	for _, c := range cases {
		got, err := Parse(c.contentType, []byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

func TestParseRefusesWhatIsNotOneKey(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		want                    error
	}{
		{"other type", "application/sdp", "Signal=1", ErrContentType},
		{"empty type", "", "1", ErrContentType},
		{"no signal", "application/dtmf-relay", "Duration=160\r\n", ErrNoSignal},
		{"empty body", "application/dtmf-relay", "", ErrNoSignal},
		{"empty signal", "application/dtmf-relay", "Signal=\r\n", ErrBadDigit},
		{"two keys", "application/dtmf-relay", "Signal=12\r\n", ErrBadDigit},
		{"two signal lines", "application/dtmf-relay", "Signal=1\r\nSignal=2\r\n", ErrBadDigit},
		{"letter E", "application/dtmf", "E", ErrBadDigit},
		{"flash", "application/dtmf", "16", ErrBadDigit},
		{"empty dtmf", "application/dtmf", "", ErrBadDigit},
		{"too large", "application/dtmf-relay", "Signal=1\r\n" + strings.Repeat("X", MaxBodySize), ErrTooLarge},
	}
	for _, c := range cases {
		got, err := Parse(c.contentType, []byte(c.body))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %q, %v; want %v", c.name, got, err, c.want)
		}
	}
}

func TestParseQuotesLittleOfAHostileBody(t *testing.T) {
	_, err := Parse("application/dtmf", []byte(strings.Repeat("Z", MaxBodySize)))
	if err == nil || len(err.Error()) > 100 {
		t.Fatalf("error %q: want a short refusal", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("application/dtmf-relay", []byte("Signal=5\r\nDuration=160\r\n"))
	f.Add("application/dtmf", []byte("#"))
	f.Add("application/dtmf-relay; x=y", []byte("Signal=10\nSignal=11\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		digit, err := Parse(contentType, body)
		if err != nil {
			return
		}
		if len(digit) != 1 || !strings.Contains("0123456789*#ABCD", digit) {
			t.Fatalf("Parse(%q, %q) = %q: not one key", contentType, body, digit)
		}
	})
}
