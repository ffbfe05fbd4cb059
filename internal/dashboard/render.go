package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// page is one page's templates: the layout and the page's own content.
type page struct{ t *template.Template }

var pageNames = []string{"login", "calls", "call", "live", "jobs", "sessions", "problem"}

var funcs = template.FuncMap{
	"when":    when,
	"clock":   callClock,
	"ms":      formatMS,
	"pct":     func(part, whole int) int { return percent(part, whole) },
	"seconds": func(d time.Duration) string { return formatDuration(d) },
	"add2":    func(a, b int) int { return a + b },
	"add4":    func(a, b, c, d int) int { return a + b + c + d },
	"count":   count,
}

func parsePages() map[string]*page {
	out := map[string]*page{}
	for _, name := range pageNames {
		t := template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name+".html"))
		out[name] = &page{t: t}
	}
	return out
}

// frame is what the layout needs around a page's own data.
type frame struct {
	Title    string
	Nav      string // the page the navigation marks current
	SignedIn bool
	Role     string
	CSRF     string
	D        any
}

// render writes page name with data; a template that fails is a 500, never half a page.
func (d *Dashboard) render(w http.ResponseWriter, _ *http.Request, status int, name string, v viewer, data map[string]any) {
	f := frame{D: data, SignedIn: name != "login", Role: v.role(), CSRF: v.csrf, Nav: name}
	if t, ok := data["Title"].(string); ok {
		f.Title = t
	}
	var buf bytes.Buffer
	if err := d.pages[name].t.ExecuteTemplate(&buf, "layout", f); err != nil {
		d.log.Error("dashboard: a page failed to render", "page", name, "err", err)
		plain(w, http.StatusInternalServerError, "The page could not be drawn; the server log says why.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem answers with a page saying what went wrong.
func (d *Dashboard) problem(w http.ResponseWriter, r *http.Request, v viewer, status int, msg string) {
	d.render(w, r, status, "problem", v, map[string]any{"Title": http.StatusText(status), "Message": msg})
}

// storeFailed answers a store error: logged in full, told in short.
func (d *Dashboard) storeFailed(w http.ResponseWriter, r *http.Request, v viewer, err error) {
	d.log.Warn("dashboard: the store failed", "path", voice.Clip(r.URL.Path, 200), "err", err)
	d.problem(w, r, v, http.StatusServiceUnavailable, "The store did not answer; the server log says why. Try again in a moment.")
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// callClock is a time into the call, m:ss.s.
func callClock(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	return fmt.Sprintf("%d:%04.1f", ms/60000, float64(ms%60000)/1000)
}

// formatMS is a latency in milliseconds; "—" for one not measured (-1).
func formatMS(v float64) string {
	if v < 0 {
		return "—"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

func formatDuration(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	d = d.Round(time.Second)
	if d < time.Hour {
		return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

// count is n things, in the singular for one: "1 call", "2 calls".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func percent(part, whole int) int {
	if whole <= 0 {
		return 0
	}
	return part * 100 / whole
}

// quote is s clipped and quoted for a plain-text message.
func quote(s string) string { return strconv.Quote(voice.Clip(s, 80)) }
