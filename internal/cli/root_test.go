package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpAligned: every command is listed once, and every summary starts in the same
// column whatever the longest name.
func TestHelpAligned(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"help"}, Env{Stdout: &out, Stderr: &out}); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	_, rows, ok := strings.Cut(out.String(), "Commands:\n")
	if !ok {
		t.Fatalf("no Commands: in\n%s", out.String())
	}
	rows, _, _ = strings.Cut(rows, "\n\n")
	seen := map[string]bool{}
	column := -1
	for _, row := range strings.Split(rows, "\n") {
		name, rest, _ := strings.Cut(strings.TrimPrefix(row, "  "), " ")
		col := len(row) - len(strings.TrimLeft(rest, " "))
		if !strings.HasPrefix(row, "  ") || name == "" || strings.TrimSpace(rest) == "" {
			t.Errorf("row %q is not \"  name  summary\"", row)
			continue
		}
		if column == -1 {
			column = col
		} else if col != column {
			t.Errorf("%s's summary starts in column %d, the others in %d:\n%s", name, col, column, rows)
		}
		if strings.TrimSpace(rest) != commands[name].summary {
			t.Errorf("%s: summary %q, want %q", name, strings.TrimSpace(rest), commands[name].summary)
		}
		seen[name] = true
	}
	for name := range commands {
		if !seen[name] {
			t.Errorf("%s is missing from the help", name)
		}
	}
	if !seen["install"] {
		t.Error("install is not in the help")
	}
}
