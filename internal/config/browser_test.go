package config

import (
	"strings"
	"testing"
)

// TestBrowserTokenRequiredOffLoopback: with the browser page on, a listen address other
// machines reach needs HANDSET_BROWSER_TOKEN; loopback does not; the error names the setting,
// the listen address and the fix.
func TestBrowserTokenRequiredOffLoopback(t *testing.T) {
	const token = "HANDSET_BROWSER_TOKEN=0123456789abcdef0123"
	cases := []struct {
		listen string
		needs  bool
	}{
		{"127.0.0.1:8080", false},
		{"127.0.0.2:0", false},
		{"localhost:8080", false},
		{"[::1]:8080", false},
		{"0.0.0.0:8080", true},
		{":8080", true},
		{"[::]:8080", true},
		{"192.168.1.20:8080", true},
		{"voice.lan:8080", true},
	}
	for _, tc := range cases {
		t.Run(tc.listen, func(t *testing.T) {
			if got := LoopbackListen(tc.listen); got == tc.needs {
				t.Errorf("LoopbackListen(%q) = %v", tc.listen, got)
			}
			base := []string{"HANDSET_BROWSER=true", "HANDSET_LISTEN=" + tc.listen}
			err := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: base}).Validate(ValidateOptions{})
			if !tc.needs {
				if err != nil {
					t.Fatalf("loopback listen refused: %v", err)
				}
				return
			}
			fe := errorFor(t, err, "HANDSET_BROWSER_TOKEN")
			for _, want := range []string{"HANDSET_BROWSER_TOKEN (browser_token): is required", tc.listen, "/?token=", "127.0.0.1"} {
				if !strings.Contains(fe.Error(), want) {
					t.Errorf("%q lacks %q", fe.Error(), want)
				}
			}
			if err := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: append(base, token)}).Validate(ValidateOptions{}); err != nil {
				t.Errorf("with a token: %v", err)
			}
			off := []string{"HANDSET_BROWSER=false", "HANDSET_LISTEN=" + tc.listen}
			if err := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: off}).Validate(ValidateOptions{}); err != nil {
				t.Errorf("the page off: %v", err)
			}
		})
	}
}

// TestBrowserTokenForm: the token is long and fits in a link as it is.
func TestBrowserTokenForm(t *testing.T) {
	cases := map[string]string{
		"0123456789abcdef":         "",
		"A-b.c_d~e0123456789":      "",
		"abc123":                   "is shorter than 16 characters",
		"0123456789abcdef 012":     "must be letters, digits",
		"0123456789abcdef&x=1":     "must be letters, digits",
		"0123456789abcdef%2F01234": "must be letters, digits",
	}
	for v, want := range cases {
		err := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BROWSER_TOKEN=" + v}}).Validate(ValidateOptions{})
		if want == "" {
			if err != nil {
				t.Errorf("%q refused: %v", v, err)
			}
			continue
		}
		fe := errorFor(t, err, "HANDSET_BROWSER_TOKEN")
		if !strings.Contains(fe.Error(), want) || strings.Contains(fe.Error(), v) {
			t.Errorf("%q: %s (want %q, and never the secret)", v, fe.Error(), want)
		}
	}
}

// TestBrowserHostsForm: host names, IPs and ports are accepted; URLs, paths, wildcards and
// bad ports are refused with the entry named.
func TestBrowserHostsForm(t *testing.T) {
	good := []string{
		"voice.lan", "voice.lan:8080", "Voice.Example.COM.", "192.168.1.20", "192.168.1.20:8080",
		"[fd00::1]:8080", "[fd00::1]", "fd00::1", "my_host", " a.lan , b.lan:9000 ,", "",
	}
	for _, v := range good {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BROWSER_HOSTS=" + v}})
		if err := c.Validate(ValidateOptions{}); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BROWSER_HOSTS= a.lan , b.lan:9000 ,"}})
	if got := strings.Join(c.BrowserHostList(), "|"); got != "a.lan|b.lan:9000" {
		t.Errorf("BrowserHostList = %q", got)
	}
	bad := map[string]string{
		"https://voice.lan":    "without a scheme",
		"voice.lan/call":       "without a scheme, a path",
		"*.voice.lan":          "wildcard",
		"voice.lan:0":          "bad port",
		"voice.lan:99999":      "bad port",
		"voice.lan:":           "bad port",
		"voice.lan:http":       "bad port",
		"[voice.lan]:80":       "not an IPv6 address",
		"[fd00::1":             "is not a host name",
		"-bad-.lan":            "is not a host name",
		"a..b":                 "is not a host name",
		"ok.lan, user@host":    `"user@host"`,
		"fd00::1:8080:x":       "is not a host name",
		"space in.lan":         "is not a host name",
		"voice.lan:8080:8081":  "is not a host name",
		"[fd00::1]x":           "is not a host name",
		"[fe80::1%25eth0]:808": "not an IPv6 address",
	}
	for v, want := range bad {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BROWSER_HOSTS=" + v}})
		fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_BROWSER_HOSTS")
		if !strings.Contains(fe.Error(), want) {
			t.Errorf("%q: %s, want %q", v, fe.Error(), want)
		}
	}
}

// TestBrowserMaxCalls: the browser cap defaults to 4, or HANDSET_MAX_CALLS when lower; set
// above HANDSET_MAX_CALLS it is an error naming both.
func TestBrowserMaxCalls(t *testing.T) {
	cases := []struct {
		environ []string
		cap     int
		err     string
	}{
		{nil, 4, ""},
		{[]string{"HANDSET_MAX_CALLS=2"}, 2, ""},
		{[]string{"HANDSET_BROWSER_MAX_CALLS=3", "HANDSET_MAX_CALLS=3"}, 3, ""},
		{[]string{"HANDSET_BROWSER_MAX_CALLS=10"}, 10, ""},
		{[]string{"HANDSET_BROWSER=true", "HANDSET_BROWSER_MAX_CALLS=5", "HANDSET_MAX_CALLS=3"}, 5,
			"HANDSET_BROWSER_MAX_CALLS (browser_max_calls): is 5, more than HANDSET_MAX_CALLS (3)"},
		{[]string{"HANDSET_BROWSER=true", "HANDSET_BROWSER_MAX_CALLS=0"}, 0, "must be more than 0"},
	}
	for _, tc := range cases {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: tc.environ})
		if got := c.BrowserCallCap(); got != tc.cap {
			t.Errorf("%v: cap %d, want %d", tc.environ, got, tc.cap)
		}
		err := c.Validate(ValidateOptions{})
		if tc.err == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.environ, err)
			}
			continue
		}
		if fe := errorFor(t, err, "HANDSET_BROWSER_MAX_CALLS"); !strings.Contains(fe.Error(), tc.err) {
			t.Errorf("%v: %s, want %q", tc.environ, fe.Error(), tc.err)
		}
	}
}
