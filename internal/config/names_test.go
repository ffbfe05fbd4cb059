package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// settingName matches what reads as a setting's name in advice and messages: HANDSET_*,
// a vendor's *_API_KEY and the TWILIO_* credentials.
var settingName = regexp.MustCompile(`\b(HANDSET_[A-Z0-9_]*[A-Z0-9]|[A-Z][A-Z0-9]*_API_KEY|TWILIO_[A-Z_]*[A-Z])\b`)

// notSettingNames are names the code mentions that are deliberately not settings.
var notSettingNames = []string{
	HermesKeyVar, OpenClawKeyVar, // the runtimes' own key variables, read when HANDSET_AGENT_KEY is empty
	"HANDSET_FLITE_CONT", "HANDSET_FLITE_STOP", // C constants of the flite binding
	"HANDSET_TEST",  // the prefix of the test suite's variables
	"HANDSET_SST",   // the typo the warning's own comment uses as its example
	"HANDSET_TEST_", // the same prefix, as written with its underscore
}

// TestEveryNameInTheCodeIsASetting ties the settings table to every piece of advice the
// code gives: doctor's fixes, diagnose's hints, each provider's registration, error
// messages. A name that is not in the table (a setting renamed, a typo) fails here instead
// of sending a user to look for a setting that does not exist.
func TestEveryNameInTheCodeIsASetting(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name != "." && name != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range settingName.FindAllString(string(src), -1) {
			checked++
			if IsSetting(name) || slices.Contains(notSettings, name) || slices.Contains(notSettingNames, name) ||
				strings.HasPrefix(name, "HANDSET_TEST_") {
				continue
			}
			t.Errorf("%s names %s, which is not a setting (internal/config/settings.go)", path, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d names found: the walk missed the code", checked)
	}
}
