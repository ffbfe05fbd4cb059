package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles creates files (name -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// mustLoad loads with opts, failing the test on error.
func mustLoad(t *testing.T, opts LoadOptions) *Config {
	t.Helper()
	c, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// fieldErrors returns the FieldErrors inside err, failing if err is not a *ValidationError.
func fieldErrors(t *testing.T, err error) []FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("error is %T, want *ValidationError: %v", err, err)
	}
	return ve.Errors
}

// errorFor returns the one FieldError for env, failing when there is not exactly one.
func errorFor(t *testing.T, err error, env string) FieldError {
	t.Helper()
	var found []FieldError
	for _, fe := range fieldErrors(t, err) {
		if fe.Env == env {
			found = append(found, fe)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one error for %s, got %d in:\n%v", env, len(found), err)
	}
	return found[0]
}

// setting returns the table entry for env.
func setting(t *testing.T, env string) Setting {
	t.Helper()
	s, ok := lookupSetting(Settings(), env)
	if !ok {
		t.Fatalf("no setting %s", env)
	}
	return s
}

func yamlLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
