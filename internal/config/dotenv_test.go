package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []DotenvEntry
	}{
		{"plain", "A=1\nB=two words\n", []DotenvEntry{{"A", "1", 1}, {"B", "two words", 2}}},
		{"no final newline", "A=1", []DotenvEntry{{"A", "1", 1}}},
		{"comments and blank lines", "# top\n\n  # indented\nA=1\n\n", []DotenvEntry{{"A", "1", 4}}},
		{"export", "export A=1\nexport\tB=2\n", []DotenvEntry{{"A", "1", 1}, {"B", "2", 2}}},
		{"a variable named export", "export=3\nexport = 4\n", []DotenvEntry{{"export", "3", 1}, {"export", "4", 2}}},
		{"spaces around =", "A = 1 \n  B\t=\t2\n", []DotenvEntry{{"A", "1", 1}, {"B", "2", 2}}},
		{"empty values", "A=\nB=  \nC= # note\n", []DotenvEntry{{"A", "", 1}, {"B", "", 2}, {"C", "", 3}}},
		{"trailing comment", "A=value # note\nB=value\t# note\n", []DotenvEntry{{"A", "value", 1}, {"B", "value", 2}}},
		{"hash inside a value", "A=pa#ss\nB=#start\nC=x#y #z\n", []DotenvEntry{{"A", "pa#ss", 1}, {"B", "#start", 2}, {"C", "x#y", 3}}},
		{"equals inside a value", "URL=postgres://u:p@h/db?sslmode=disable\n", []DotenvEntry{{"URL", "postgres://u:p@h/db?sslmode=disable", 1}}},
		{"single quotes are literal", `A='a \n "b" # c'` + "\n", []DotenvEntry{{"A", `a \n "b" # c`, 1}}},
		{"double quotes with escapes", `A="line1\nline2\t\"q\" \\ \x"` + "\n", []DotenvEntry{{"A", "line1\nline2\t\"q\" \\ \\x", 1}}},
		{"comment after quotes", `A="x" # note` + "\n" + `B='y'   ` + "\n", []DotenvEntry{{"A", "x", 1}, {"B", "y", 2}}},
		{"quoted multi-line value", "A=\"first\nsecond\"\nB='x\ny'\nC=3\n", []DotenvEntry{{"A", "first\nsecond", 1}, {"B", "x\ny", 3}, {"C", "3", 5}}},
		{"windows line endings", "A=1\r\nB=\"2\"\r\n# c\r\nC=3\r\n", []DotenvEntry{{"A", "1", 1}, {"B", "2", 2}, {"C", "3", 4}}},
		{"byte order mark", "\ufeffA=1\n", []DotenvEntry{{"A", "1", 1}}},
		{"duplicate keys kept in order", "A=1\nA=2\n", []DotenvEntry{{"A", "1", 1}, {"A", "2", 2}}},
		{"underscore and digits", "_A1=x\nlower_case=y\n", []DotenvEntry{{"_A1", "x", 1}, {"lower_case", "y", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDotenv(".env", []byte(tt.in))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDotenvErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"no equals", "A=1\nJUSTANAME\n", "conf/app.env:2: expected NAME=value, with a name of letters, digits and underscores"},
		{"bad name", "\n\n1A=2\n", "conf/app.env:3: expected NAME=value, with a name of letters, digits and underscores"},
		{"name with dash", "MY-VAR=2\n", "conf/app.env:1: expected NAME=value, with a name of letters, digits and underscores"},
		{"bare export", "export\n", "conf/app.env:1: expected NAME=value, with a name of letters, digits and underscores"},
		{"unclosed double quote", "A=1\nB=\"never\nC=3\n", "conf/app.env:2: a quoted value is never closed"},
		{"unclosed single quote", "B='never", "conf/app.env:1: a quoted value is never closed"},
		{"text after quote", "A=\"x\"y\n", "conf/app.env:1: unexpected text after the closing quote"},
		{"text after a multi-line quote", "A=\"x\ny\" z\n", "conf/app.env:2: unexpected text after the closing quote"},
		{"several bad lines", "a b\nOK=1\n-x=2\n", "conf/app.env:1: expected NAME=value, with a name of letters, digits and underscores\nconf/app.env:3: expected NAME=value, with a name of letters, digits and underscores"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDotenv("conf/app.env", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("got  %q\nwant %q", err.Error(), tt.want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != "conf/app.env" || fe.Line == 0 {
				t.Errorf("want a *FileError with path and line, got %#v", fe)
			}
		})
	}
}

func TestMalformedEnvFileFailsLoad(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.env": "OK=1\nbroken line\n"})
	_, err := Load(LoadOptions{WorkDir: dir, EnvFiles: []string{"a.env"}})
	if err == nil || err.Error() != "a.env:2: expected NAME=value, with a name of letters, digits and underscores" {
		t.Fatalf("err = %v", err)
	}
}

// encodeDotenv writes entries back as dotenv text, every value double-quoted.
func encodeDotenv(entries []DotenvEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Key + "=" + quoteDotenv(e.Value) + "\n")
	}
	return b.String()
}

func FuzzParseDotenv(f *testing.F) {
	for _, seed := range []string{
		"A=1\n", "export B='x y'\n", "C=\"a\\nb\"\n", "# c\n\nD=v # note\n", "E=\"multi\nline\"\n",
		"F='unclosed\n", "G=\"x\"junk\n", "=nope\n", "\ufeffH=\r\n", "I=a#b\texport J=2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		entries, err := ParseDotenv("fuzz.env", []byte(in))
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.env:") {
					t.Fatalf("error line without path and line number: %q", line)
				}
			}
			return
		}
		last := 0
		for _, e := range entries {
			if !validName(e.Key) {
				t.Fatalf("invalid key %q", e.Key)
			}
			if e.Line <= last || e.Line > strings.Count(in, "\n")+1 {
				t.Fatalf("line %d after %d in %d-line input", e.Line, last, strings.Count(in, "\n")+1)
			}
			last = e.Line
		}
		// What was read must survive being written back and read again.
		again, err := ParseDotenv("again.env", []byte(encodeDotenv(entries)))
		if err != nil {
			t.Fatalf("re-parse of encoded entries: %v", err)
		}
		if len(again) != len(entries) {
			t.Fatalf("re-parse gave %d entries, want %d", len(again), len(entries))
		}
		for i := range entries {
			if again[i].Key != entries[i].Key || again[i].Value != entries[i].Value {
				t.Fatalf("entry %d: %q=%q became %q=%q", i, entries[i].Key, entries[i].Value, again[i].Key, again[i].Value)
			}
		}
	})
}
