package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTestCmdJudgesWhatTheSTTHeard: the STT stage passes only when the transcript holds
// enough of the spoken phrase's words, and says how many; a mishearing fails the command
// with the figure and what to check.
func TestTestCmdJudgesWhatTheSTTHeard(t *testing.T) {
	for _, tc := range []struct {
		heard string
		code  int
		want  []string
	}{
		{"that thing wanna do three", 1, []string{"FAIL stt", `heard "that thing wanna do three" for "testing one two three": 1 of 4 words (25%), the round trip needs 75%`, "HANDSET_DEEPGRAM_LANGUAGE"}},
		{"Testing, 1, 2, 3.", 0, []string{"ok   stt", `heard "Testing, 1, 2, 3." (4 of 4 words)`}},
		{"testing one to three", 0, []string{"ok   stt", "(3 of 4 words)"}},
	} {
		t.Run(tc.heard, func(t *testing.T) {
			_, env := withFakes(t, []string{tc.heard})
			code, out := runCmd(t, env, "test")
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	_, env := withFakes(t, []string{"testing one two"})
	_, js := runCmd(t, env, "test", "--json")
	var results []probeResult
	if err := json.Unmarshal([]byte(js), &results); err != nil || len(results) != 3 {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	if r := results[2]; !r.OK || r.WordsHeard != 3 || r.WordsExpected != 4 || r.Heard == nil || *r.Heard != "testing one two" {
		t.Errorf("stt result %+v", r)
	}
}

// TestWordOverlap: words count after case, punctuation and digits are normalised, in
// order, each once.
func TestWordOverlap(t *testing.T) {
	for _, tc := range []struct {
		got  string
		want int
	}{
		{"testing one two three", 4},
		{"TESTING ONE TWO THREE!", 4},
		{"testing 1 2 3", 4},
		{"testing 123", 4},
		{"testing, 1-2-3.", 4},
		{"that thing wanna do three", 1},
		{"three two one testing", 1}, // order matters
		{"testing testing one one", 2},
		{"", 0},
		{"uh testing um one two three okay", 4},
	} {
		if got, total := wordOverlap(probePhrase, tc.got); got != tc.want || total != 4 {
			t.Errorf("wordOverlap(%q) = %d of %d, want %d of 4", tc.got, got, total, tc.want)
		}
	}
	if got := normWords("Don't call 911, o'clock"); strings.Join(got, " ") != "dont call nine one one oclock" {
		t.Errorf("normWords = %q", got)
	}
}
