package config

import (
	"strings"
	"testing"
)

func FuzzParseYAML(f *testing.F) {
	for _, seed := range []string{
		"listen: :8080\nagent:\n  runtime: hermes\n  key: ${KEY}\n",
		"agent:\n  urll: x\n",
		"a: &x 1\nlisten: *x\n",
		"log: {level: debug, format: json}\n",
		"- 1\n- 2\n",
		"agent: hermes\n",
		"listen: [1]\n",
		"messages:\n  first: \"$${X} ${X} ${\"\n",
		"turn:\n  tail_grace: ~\n  tail_grace: 1s\n",
		"? [a]\n: b\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		env := map[string]envValue{"KEY": {value: "secret"}, "X": {value: "x"}}
		values, warnings, errs := parseYAML("f.yaml", []byte(in), settingTable(), env)
		for _, w := range warnings {
			if w.Origin.Path != "f.yaml" || w.Origin.Line < 1 {
				t.Fatalf("warning %v does not name the file and line", w)
			}
		}
		for _, err := range errs {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		}
		for path, v := range values {
			found := false
			for _, s := range settingTable() {
				found = found || s.YAML == path
			}
			if !found {
				t.Fatalf("value for unknown key %q", path)
			}
			if v.line < 1 {
				t.Fatalf("%s has no line", path)
			}
		}
	})
}

func FuzzExpandVars(f *testing.F) {
	for _, seed := range []string{"plain", "${A}", "$${A}", "${A", "${}", "a${A}b${B}c", "$$", "${A}}", "${${A}}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		env := map[string]envValue{"A": {value: "1"}, "B": {value: "${A}"}}
		out, reason := expandVars(in, env)
		if reason != "" {
			if out != "" {
				t.Fatalf("failed expansion returned %q", out)
			}
			return
		}
		if !strings.Contains(in, "${") && out != in {
			t.Fatalf("%q changed to %q without a reference", in, out)
		}
		// Expansion happens once: a value that itself looks like a reference stays as it is.
		if in == "${B}" && out != "${A}" {
			t.Fatalf("expanded twice: %q", out)
		}
	})
}
