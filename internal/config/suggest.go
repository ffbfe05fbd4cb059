package config

import (
	"cmp"
	"slices"
	"strings"
)

// A name Handset does not know is warned about, never refused: a typo costs a warning with the
// likely fix, and a variable meant for another program costs nothing.

// Warning is a name Handset does not know where it reads settings: a HANDSET_* variable in the
// environment or a dotenv file, or a key in the YAML file. Its value is ignored.
type Warning struct {
	Name    string // as written: HANDSET_SST, or the YAML path agent.urll
	Suggest string // the closest known name (HANDSET_STT, agent.url), or ""
	Origin  Origin // where the name was found
}

// Message says what is wrong in one sentence: "HANDSET_SST is not a Handset setting; did you
// mean HANDSET_STT?"
func (w Warning) Message() string {
	if w.Suggest != "" {
		return w.Name + " is not a Handset setting; did you mean " + w.Suggest + "?"
	}
	return w.Name + " is not a Handset setting; it is ignored"
}

// String is Message followed by where the name was found.
func (w Warning) String() string { return w.Message() + " (from " + w.Origin.String() + ")" }

// Warnings are the unknown names Load found, YAML keys first, in file order, then variables
// from dotenv files and the environment. Nil for a Config built by Default.
func (c *Config) Warnings() []Warning {
	if c.info == nil {
		return nil
	}
	return slices.Clone(c.info.warnings)
}

const envPrefix = "HANDSET_"

// notSettings are HANDSET_* variables this repository's own scripts and tests read; they are
// not settings, and not typos either.
var notSettings = []string{"HANDSET_SPEECH_DIR", "HANDSET_PG_PORT", "HANDSET_OPENCLAW_LOG",
	"HANDSET_OPENCLAW_FRAMES", "HANDSET_SPHINX_REMEASURE"}

// unknownVariables warns about every HANDSET_* variable (in any case) that is not a setting.
// Other variables are left alone: the environment holds many that belong to other programs.
func unknownVariables(env map[string]envValue, table []Setting) []Warning {
	var cands []candidate
	for _, s := range table {
		// Both spellings a user might reach for: the variable and the YAML path.
		cands = append(cands,
			candidate{strings.TrimPrefix(s.Env, envPrefix), s.Env},
			candidate{strings.ToUpper(strings.ReplaceAll(s.YAML, ".", "_")), s.Env})
	}
	var out []Warning
	for name, v := range env {
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, envPrefix) || slices.Contains(notSettings, name) || strings.HasPrefix(name, "HANDSET_TEST_") {
			continue
		}
		if _, known := lookupSetting(table, name); known {
			continue
		}
		out = append(out, Warning{Name: name, Suggest: closest(strings.TrimPrefix(upper, envPrefix), cands), Origin: v.origin})
	}
	slices.SortFunc(out, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.Origin.Kind, b.Origin.Kind), cmp.Compare(a.Origin.Path, b.Origin.Path),
			cmp.Compare(a.Origin.Line, b.Origin.Line), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// candidate is a spelling to compare against (key) and the name to suggest for it.
type candidate struct{ key, name string }

// closest returns the name of the candidate nearest to word, ignoring case, when it is close
// enough to be a typo: at most one edit in three characters, and at least one edit allowed.
func closest(word string, cands []candidate) string {
	word = strings.ToLower(word)
	best, bestDist := "", max(1, len([]rune(word))/3)+1
	for _, c := range cands {
		if d := editDistance(word, strings.ToLower(c.key)); d < bestDist {
			best, bestDist = c.name, d
		}
	}
	return best
}

// closestValue returns the allowed value a mistyped choice most likely meant: the nearest by
// edit distance, or the only one it contains or is part of ("warning" for warn, "pocketsphinx"
// for sphinx). "" when none is close.
func closestValue(value string, allowed []string) string {
	cands := make([]candidate, len(allowed))
	for i, a := range allowed {
		cands[i] = candidate{a, a}
	}
	if best := closest(value, cands); best != "" {
		return best
	}
	v := strings.ToLower(value)
	var found []string
	for _, a := range allowed {
		if min(len(a), len(v)) >= 3 && (strings.Contains(v, a) || strings.Contains(a, v)) {
			found = append(found, a)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b, in characters:
// insertions, deletions, substitutions and swaps of two neighbours each count one, so
// HANDSET_SST is one edit from HANDSET_STT and "flie" one from "file".
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance between s[:i] and t[:j]; three rows suffice for the swap rule.
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
