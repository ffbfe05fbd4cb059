package dashboard

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

var (
	fieldTag   = regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)
	idAttr     = regexp.MustCompile(`\bid="([^"]+)"`)
	headingTag = regexp.MustCompile(`<h([1-6])\b`)
	headerCell = regexp.MustCompile(`<th[\s>]`)
)

// Every page: lang, one h1, headings that never skip a level, a label for every field,
// a scope on every column header, a title and description on every chart.
func TestPagesAreAccessibleByStructure(t *testing.T) {
	src := hostileSource(filepath.Join("testdata", "bargein.jsonl"))
	src.calls = append(src.calls, store.Call{ID: "c_b", Direction: voice.Inbound, Journal: filepath.Join("testdata", "bargein.jsonl")})
	h := newHarness(t, src, func(o *Options) { o.Recordings = fakeRecordings{}; o.Live = NewLive() })
	c := h.signIn(t, adminToken)
	pages := map[string]string{}
	_, pages["/dashboard/login"] = h.get(t, browser(t), "/dashboard/login")
	for _, p := range []string{"/dashboard", "/dashboard/calls/c_bad", "/dashboard/calls/c_b", "/dashboard/jobs", "/dashboard/sessions", "/dashboard/live"} {
		_, pages[p] = h.get(t, c, p)
	}
	for path, body := range pages {
		if !strings.Contains(body, `<html lang="en">`) {
			t.Errorf("%s: no lang", path)
		}
		last := 0
		for i, m := range headingTag.FindAllStringSubmatch(body, -1) {
			level, _ := strconv.Atoi(m[1])
			if (i == 0 && level != 1) || (i > 0 && level == 1) || level > last+1 {
				t.Errorf("%s: heading h%d after h%d", path, level, last)
			}
			last = level
		}
		for _, field := range fieldTag.FindAllString(body, -1) {
			if strings.Contains(field, `type="hidden"`) {
				continue
			}
			id := idAttr.FindStringSubmatch(field)
			if id == nil || !strings.Contains(body, `<label for="`+id[1]+`"`) {
				t.Errorf("%s: a field without a label: %s", path, field)
			}
		}
		if n, scoped := len(headerCell.FindAllString(body, -1)), strings.Count(body, `<th scope=`); n != scoped {
			t.Errorf("%s: %d of %d header cells have no scope", path, n-scoped, n)
		}
		if path == "/dashboard/calls/c_b" && strings.Count(body, "<svg") != 2 {
			t.Errorf("%s: the waterfall and the waveform are not both drawn", path)
		}
		for _, svg := range strings.Split(body, "<svg")[1:] {
			if !strings.Contains(svg, `role="img"`) || !strings.Contains(svg[:strings.Index(svg, "</svg>")], "<title") ||
				!strings.Contains(svg[:strings.Index(svg, "</svg>")], "<desc") {
				t.Errorf("%s: a chart without role, title or description", path)
			}
		}
	}
}
