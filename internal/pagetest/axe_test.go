package pagetest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/testpeer"
)

// results is an audit in the form runAxe returns it: one element inside shadow DOM.
const results = `{
  "version": "4.14.1",
  "url": "http://127.0.0.1:1/page",
  "violations": [
    {"id": "image-alt", "impact": "critical", "help": "Images must have alternative text",
     "helpUrl": "https://example.org/rules/image-alt",
     "nodes": [{"target": ["main > img"], "html": "<img src=\"/dot.png\">",
                "failureSummary": "Fix any of the following:\n  Element does not have an alt attribute\n  Element has no title attribute"}]},
    {"id": "label", "impact": "serious", "help": "Form elements must have labels",
     "helpUrl": "https://example.org/rules/label",
     "nodes": [{"target": [["call-widget", "input#name"]], "html": "<input id=\"name\">",
                "failureSummary": "Fix any of the following:\n  Form element does not have an implicit (wrapped) <label>"}]},
    {"id": "td-headers-attr", "impact": "moderate", "help": "Table cells must name their headers",
     "helpUrl": "https://example.org/rules/td-headers-attr", "nodes": []},
    {"id": "link-in-text-block", "impact": "minor", "help": "Links must be told apart",
     "helpUrl": "https://example.org/rules/link-in-text-block", "nodes": []}
  ]
}`

func TestDecodeAudit(t *testing.T) {
	a, err := decodeAudit(results)
	if err != nil {
		t.Fatal(err)
	}
	if a.AxeVersion != "4.14.1" || a.URL != "http://127.0.0.1:1/page" || len(a.Violations) != 4 {
		t.Fatalf("audit %+v", a)
	}
	img := a.Violations[0]
	if img.ID != "image-alt" || img.Impact != "critical" || img.HelpURL != "https://example.org/rules/image-alt" || len(img.Nodes) != 1 {
		t.Errorf("first violation %+v", img)
	}
	if got := img.Nodes[0].Target; !reflect.DeepEqual(got, []Selector{"main > img"}) {
		t.Errorf("plain target %q", got)
	}
	if got := a.Violations[1].Nodes[0].Target; !reflect.DeepEqual(got, []Selector{"call-widget >>> input#name"}) {
		t.Errorf("shadow DOM target %q", got)
	}
}

func TestDecodeAuditRefusesWhatAxeDoesNotWrite(t *testing.T) {
	for _, raw := range []string{
		`not json`,
		`{"violations": [{"id": "x", "nodes": [{"target": [42]}]}]}`,
		`{"violations": [{"id": "x", "nodes": [{"target": [["a", 1]]}]}]}`,
	} {
		if a, err := decodeAudit(raw); err == nil {
			t.Errorf("decoded %s as %+v", raw, a)
		}
	}
}

func TestSplitFailsSeriousAndCriticalOnly(t *testing.T) {
	a, err := decodeAudit(results)
	if err != nil {
		t.Fatal(err)
	}
	unknown := Violation{ID: "new-rule", Impact: ""}
	blocking, other := Split(append(a.Violations, unknown))
	ids := func(vs []Violation) (out []string) {
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	if got, want := ids(blocking), []string{"image-alt", "label", "new-rule"}; !reflect.DeepEqual(got, want) {
		t.Errorf("blocking %v, want %v", got, want)
	}
	if got, want := ids(other), []string{"td-headers-attr", "link-in-text-block"}; !reflect.DeepEqual(got, want) {
		t.Errorf("other %v, want %v", got, want)
	}
}

func TestViolationReadsAsWhatToFixWhere(t *testing.T) {
	a, err := decodeAudit(results)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Violations[0].String()
	want := `image-alt (critical): Images must have alternative text
  https://example.org/rules/image-alt
  at main > img: <img src="/dot.png">
    Fix any of the following:
    Element does not have an alt attribute
    Element has no title attribute`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := a.Violations[1].String(); !strings.Contains(got, "at call-widget >>> input#name: <input id=\"name\">") {
		t.Errorf("shadow DOM element not named:\n%s", got)
	}
}

func TestArtifactDir(t *testing.T) {
	want := filepath.Join(t.TempDir(), "made", "here")
	t.Setenv(ArtifactsEnv, want)
	if got := ArtifactDir(t); got != want {
		t.Errorf("ArtifactDir = %q, want %q", got, want)
	}
	if info, err := os.Stat(want); err != nil || !info.IsDir() {
		t.Errorf("ArtifactDir did not make %s: %v", want, err)
	}

	t.Setenv(ArtifactsEnv, "")
	root, err := testpeer.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("moduleRoot %s holds no go.mod", root)
	}
	if got := ArtifactDir(t); got != filepath.Join(root, "test-artifacts") {
		t.Errorf("ArtifactDir unset = %q, want test-artifacts/ beside go.mod", got)
	}
}
