package doctor

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// The helpers below are what every provider's checks share: results in one line, checks
// that only read this machine or that talk to a server, and an HTTP probe that says in
// plain words why a server did not answer.

// OKResult, WarnResult, FailResult and SkipResult build a Result in one line.
func OKResult(detail string) Result   { return Result{Status: OK, Detail: detail} }
func SkipResult(detail string) Result { return Result{Status: Skip, Detail: detail} }
func WarnResult(detail, fix string) Result {
	return Result{Status: Warn, Detail: detail, Fix: fix}
}
func FailResult(detail, fix string) Result {
	return Result{Status: Fail, Detail: detail, Fix: fix}
}

// Local is a check that only reads this machine; Net one that talks to a server, which
// --no-network skips; Fixed one whose result is already known.
func Local(section, name string, run func(context.Context) Result) Check {
	return Check{Section: section, Name: name, Run: run}
}

func Net(section, name string, run func(context.Context) Result) Check {
	return Check{Section: section, Name: name, Network: true, Run: run}
}

func Fixed(section, name string, r Result) Check {
	return Local(section, name, func(context.Context) Result { return r })
}

// Answer is what a server said to a probe: its status, headers and up to 1 MiB of body.
type Answer struct {
	Status int
	Body   []byte
	Header http.Header
}

// maxAnswer bounds what a probe reads of a body.
const maxAnswer = 1 << 20

// Get sends GET rawURL with the headers through client and reads the answer.
func Get(ctx context.Context, client *http.Client, rawURL string, header map[string]string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("User-Agent", "handset-doctor")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: resp.StatusCode, Body: body, Header: resp.Header}, nil
}

// Snippet is a short, single-line excerpt of a body, for details.
func Snippet(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
