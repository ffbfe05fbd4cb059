package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated settings table in docs/configuration.md")

const (
	docPath    = "../../docs/configuration.md"
	tableBegin = "<!-- settings table: generated from internal/config/settings.go by `go test ./internal/config -run TestConfigurationDoc -update`; do not edit by hand -->"
	tableEnd   = "<!-- end of settings table -->"
)

// renderSettingsTable writes the reference table of every setting as Markdown.
func renderSettingsTable() string {
	var b strings.Builder
	b.WriteString("| Environment variable | YAML key | Type | Default | Meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, s := range Settings() {
		typ := s.Kind.String()
		if s.Kind == KindEnum {
			typ = "one of " + codeList(s.Allowed)
		}
		def := s.DefaultText
		switch {
		case def != "":
		case s.Default == "":
			def = "empty"
		case s.Kind == KindString && strings.Contains(s.Default, " "):
			def = `"` + s.Default + `"`
		default:
			def = "`" + s.Default + "`"
		}
		cells := []string{"`" + s.Env + "`", "`" + s.YAML + "`", typ, def, s.Help}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func codeList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "`" + v + "`"
	}
	return strings.Join(quoted, ", ")
}

func readDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("docs/configuration.md: %v", err)
	}
	return string(data)
}

func TestConfigurationDoc(t *testing.T) {
	doc := readDoc(t)
	begin, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("docs/configuration.md lacks the markers around the settings table:\n%s\n%s", tableBegin, tableEnd)
	}
	current := doc[begin+len(tableBegin) : end]
	want := "\n" + renderSettingsTable() + "\n"
	if *update {
		doc = doc[:begin+len(tableBegin)] + want + doc[end:]
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, s := range Settings() {
		row := "| `" + s.Env + "` | `" + s.YAML + "` |"
		if !strings.Contains(current, row) {
			t.Errorf("docs/configuration.md has no row for %s (%s)", s.Env, s.YAML)
		}
	}
	if current != want {
		t.Errorf("the settings table in docs/configuration.md is out of date; regenerate it with\n\tgo test ./internal/config -run TestConfigurationDoc -update")
	}
}

// fenced returns the body of the first ``` block of the given language after marker.
func fenced(t *testing.T, doc, marker, lang string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("docs/configuration.md has no %q", marker)
	}
	rest := doc[i:]
	open := "```" + lang + "\n"
	j := strings.Index(rest, open)
	if j < 0 {
		t.Fatalf("no ```%s block after %q", lang, marker)
	}
	body := rest[j+len(open):]
	k := strings.Index(body, "```")
	if k < 0 {
		t.Fatalf("unclosed ```%s block after %q", lang, marker)
	}
	return body[:k]
}

// The example in the docs must load, and be valid for `handset serve`.
func TestConfigurationDocExample(t *testing.T) {
	doc := readDoc(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"handset.yaml": fenced(t, doc, "<!-- example handset.yaml -->", "yaml"),
		".env":         fenced(t, doc, "<!-- example .env -->", "sh"),
	})
	c := mustLoad(t, LoadOptions{WorkDir: dir})
	if err := c.Validate(ValidateOptions{RequireAgent: true, RequireSpeech: true, RequireKeys: true}); err != nil {
		t.Fatalf("the documented example is not valid for serve:\n%v", err)
	}
	if w := c.Warnings(); len(w) > 0 {
		t.Errorf("the documented example has names Handset does not know: %v", w)
	}
	if c.ConfigFile() != filepath.Join(dir, "handset.yaml") || !c.Agent.Key.IsSet() || !c.STT.Deepgram.Key.IsSet() {
		t.Errorf("the example did not load as documented: file %q, agent key %s, deepgram key %s",
			c.ConfigFile(), c.Agent.Key.Status(), c.STT.Deepgram.Key.Status())
	}
}
