package session

import "strings"

// withheldWords are what carriers and PBXs put in From when the caller withheld their
// number, compared after case and formatting are dropped.
var withheldWords = map[string]bool{
	"anonymous": true, "anon": true, "restricted": true, "unknown": true, "unavailable": true,
	"private": true, "withheld": true, "blocked": true, "notavailable": true, "outofarea": true,
	"privatenumber": true, "unknownnumber": true, "withheldnumber": true, "nocallerid": true,
	"unknowncaller": true, "anonymousinvalid": true,
}

// withheldNumbers are placeholder numbers carriers put in From for a withheld caller ID
// (digits only, without the +): the words above spelled on a phone keypad, as Twilio
// sends them.
var withheldNumbers = map[string]bool{
	"266696687":   true, // ANONYMOUS
	"7378742833":  true, // RESTRICTED
	"86282452253": true, // UNAVAILABLE
	"8656696":     true, // UNKNOWN
	"2562533":     true, // BLOCKED
}

// Withheld reports whether a caller ID names nobody: empty; a word such as "anonymous",
// "Restricted" or "unknown"; a SIP address of such a user (sip:anonymous@anonymous.invalid,
// "Anonymous" <sip:anonymous@host>); a carrier's placeholder number for a withheld caller
// ID (+266696687 and its siblings); or a number of zeros. Such an ID is shared by every
// caller who withholds their number, so it must never key memory or be called back.
func Withheld(callerID string) bool {
	id := strings.TrimSpace(callerID)
	if open := strings.IndexByte(id, '<'); open >= 0 {
		// "Display Name" <sip:user@host>: the address decides, the name is decoration.
		rest := id[open+1:]
		if end := strings.IndexByte(rest, '>'); end >= 0 {
			rest = rest[:end]
		}
		id = strings.TrimSpace(rest)
	}
	id = strings.ToLower(strings.Trim(id, `"' `))
	for _, scheme := range []string{"sips:", "sip:", "tel:"} {
		if rest, ok := strings.CutPrefix(id, scheme); ok {
			id = rest
			break
		}
	}
	if user, host, ok := strings.Cut(id, "@"); ok {
		if h, _, _ := strings.Cut(host, ";"); strings.HasPrefix(h, "anonymous.invalid") {
			return true // RFC 3323's address for an anonymous caller
		}
		id = user
	}
	if i := strings.IndexAny(id, ";?"); i >= 0 {
		id = id[:i] // URI parameters and headers
	}
	compact := strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t-._()/\"'\u00a0", r) {
			return -1
		}
		return r
	}, id)
	if compact == "" || withheldWords[compact] {
		return true
	}
	digits := strings.TrimPrefix(compact, "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	if strings.Trim(digits, "0") == "" {
		return true // 0000000000: a PBX's stand-in for no number
	}
	if !strings.HasPrefix(compact, "+") {
		digits = strings.TrimPrefix(digits, "00") // international prefix
	}
	return withheldNumbers[digits]
}

// phoneIdentity reports whether a caller ID is one the phone network asserts (a number, a
// SIP or tel address), as opposed to an identity Handset issued itself (the browser page's
// cookie): only the former can be spoofed by the caller, and only it can be attested.
func phoneIdentity(callerID string) bool {
	n := NormalizeNumber(callerID)
	if strings.HasPrefix(n, "+") || (n != "" && strings.Trim(n, "0123456789") == "") {
		return true
	}
	for _, scheme := range []string{"sip:", "sips:", "tel:"} {
		if strings.HasPrefix(n, scheme) || strings.Contains(n, "<"+scheme) {
			return true
		}
	}
	return false
}
