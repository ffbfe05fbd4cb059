package bridge

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// HeaderSession names the request header that says which session (room, call) a request
// belongs to. It wins over the body's metadata, Vapi's call id and OpenAI's user.
const HeaderSession = "X-Handset-Session"

// CarrierName is what a bridged turn's session context names as its carrier: session key
// templates can tell bridged conversations from Handset's own calls by {carrier}.
const CarrierName = obs.BridgeCarrier

// metadataSessionKeys and metadataCallerKeys are the metadata fields read, in order.
var (
	metadataSessionKeys = []string{"handset_session", "session_id", "session", "room", "room_name"}
	metadataCallerKeys  = []string{"caller_number", "caller", "from"}
)

// identity is who a request speaks for.
type identity struct {
	// callID is the conversation's id as the runtime sees it ("bridge-…"), stable for a
	// session; a request without a session gets one of its own.
	callID voice.CallID
	// source says where the session came from: header, metadata, call, user, or none.
	source string
	// caller is the caller's number, when the client said it. It is only ever hashed.
	caller string
}

// identify reads a request's session and caller. A session id that is a phone number is
// taken as the caller's and keyed by its hash (hash, Handset's keyed caller hash), so no
// raw number reaches a runtime; so is an id that is not plain, so that no two ids meet in
// one session and nothing odd reaches a runtime's header.
func identify(r *http.Request, req chatRequest, hash func(string) string) identity {
	var id identity
	raw := ""
	// Vapi sends its assistant's metadata with every call to that assistant: under a
	// call object, the metadata names no session and no caller, or every caller of the
	// assistant would share one.
	vapi := req.Call != nil
	meta := ""
	if !vapi {
		meta = metadataString(req.Metadata, metadataSessionKeys)
	}
	switch {
	case strings.TrimSpace(r.Header.Get(HeaderSession)) != "":
		raw, id.source = r.Header.Get(HeaderSession), "header"
	case vapi && strings.TrimSpace(req.Call.ID) != "":
		raw, id.source = req.Call.ID, "call"
	case meta != "":
		raw, id.source = meta, "metadata"
	case strings.TrimSpace(req.User) != "":
		raw, id.source = req.User, "user"
	}
	switch {
	case vapi && req.Call.Customer != nil:
		id.caller = strings.TrimSpace(req.Call.Customer.Number)
	case !vapi:
		id.caller = metadataString(req.Metadata, metadataCallerKeys)
	}
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
	case looksLikeNumber(raw):
		if id.caller == "" {
			id.caller = raw
		}
		// a withheld number has no hash: everyone withholding theirs would share a session
		if h := hash(raw); h != "" {
			id.callID = voice.CallID("bridge-caller-" + h)
		}
	default:
		id.callID = sessionCallID(raw)
	}
	if id.callID == "" {
		id.source, id.callID = "none", voice.CallID("bridge-"+randomID())
	}
	return id
}

// sessionCallID is the call id of the session a client named: "bridge-<id>" for a plain
// id, else "bridge-h-<hash of it>", so no two ids meet in one session and nothing odd
// reaches a runtime's header.
func sessionCallID(raw string) voice.CallID {
	if cleanSession.MatchString(raw) {
		return voice.CallID("bridge-" + raw)
	}
	sum := sha256.Sum256([]byte(raw))
	return voice.CallID("bridge-h-" + hex.EncodeToString(sum[:12]))
}

// context is the session context a runtime files the turn under: the bridge's call id,
// and the caller's hash (hash turns a number into it) when the client named one.
func (id identity) context(hash func(string) string) session.Context {
	c := session.Context{CallID: id.callID, Carrier: CarrierName, Direction: voice.Inbound}
	switch {
	case id.caller == "":
	case session.Withheld(id.caller):
		c.Caller = session.CallerWithheld
	default:
		c.CallerHash = hash(id.caller)
	}
	return c
}

// metadataString is the first of keys that metadata holds as a non-empty string.
func metadataString(metadata map[string]any, keys []string) string {
	for _, k := range keys {
		if s, ok := metadata[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// numberLike is a phone number as people write one: an optional +, then 7 to 15 digits
// with spaces, dashes, dots, slashes or parentheses between them; or a tel: URI.
var numberLike = regexp.MustCompile(`^(tel:)?\+?[0-9 ().\-/]{7,24}$`)

func looksLikeNumber(s string) bool {
	if !numberLike.MatchString(s) {
		return false
	}
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return digits >= 7 && digits <= 15
}

// cleanSession is a session id used as it is; any other is hashed.
var cleanSession = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$`)

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
