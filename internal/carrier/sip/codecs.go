package sip

import "slices"

// missingG711 names a G.711 codec (PCMU or PCMA) a codec list lacks, empty when it has
// both. Every trunk speaks G.711; a list of G.722 and one G.711 law refuses the trunks
// that offer only the other law.
func missingG711(names []string) string {
	for _, law := range []string{"PCMU", "PCMA"} {
		if !slices.Contains(names, law) {
			return law
		}
	}
	return ""
}
