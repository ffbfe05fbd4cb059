package faketwilio

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
)

// Defaults of a Server built from the zero Options.
const (
	// DefaultAccountSID is the account the fake serves when Options.AccountSID is empty.
	DefaultAccountSID = "AC0123456789abcdef0123456789abcdef"
	// DefaultAuthToken is the auth token it accepts when Options.AuthToken is empty.
	DefaultAuthToken = "5f2c0e4b9a7d41c38e6f1a2b3c4d5e6f"
	// DefaultFriendlyName is the account's friendly name when Options.FriendlyName is empty.
	DefaultFriendlyName = "My first Twilio account"
	// DefaultPageSize is the page size of a list request without PageSize, as on Twilio.
	DefaultPageSize = 50
	// MaxPageSize is the largest page Twilio returns; larger PageSize values are clamped.
	MaxPageSize = 1000
)

// APIVersion is the path prefix of every resource.
const APIVersion = "/2010-04-01"

// Twilio error codes the fake answers with (https://www.twilio.com/docs/api/errors).
const (
	CodeAuthenticate       = 20003 // 401: missing or wrong credentials
	CodeMethodNotAllowed   = 20004 // 405: the resource does not take this HTTP method
	CodeNotFound           = 20404 // 404: no such resource
	CodeTooManyRequests    = 20429 // 429
	CodeInternalError      = 20500 // 5xx
	CodeInvalidMethod      = 21403 // 400: VoiceMethod and friends must be GET or POST
	CodeInvalidURL         = 21502 // 400: a callback URL that is not an absolute http(s) URL
	CodeInvalidApplication = 22108 // 400: VoiceApplicationSid is not an AP… SID
)

// Options configure a Server. The zero value is an active "Full" account with
// DefaultAccountSID, DefaultAuthToken and no numbers.
type Options struct {
	AccountSID   string // AC + 32 hex digits; default DefaultAccountSID
	AuthToken    string // default DefaultAuthToken
	FriendlyName string // default DefaultFriendlyName
	Type         string // "Full" or "Trial"; default "Full"
	Status       string // "active", "suspended" or "closed"; default "active"
	// Numbers are the account's incoming phone numbers, in the order lists return them.
	Numbers []Number
	// MaxPageSize caps the page size of list answers (default and at most MaxPageSize);
	// a small value makes every list page through next_page_uri.
	MaxPageSize int
	// Now stamps date_created and date_updated (default time.Now).
	Now func() time.Time
	// Logger receives one line per request (nil discards).
	Logger *slog.Logger

	// Answer decides what the callee of each outbound call does (see Answer); nil answers
	// every call with a human who stays on the line DefaultHold and hangs up.
	Answer func(to string) Answer
	// HTTPClient sends the webhooks, status callbacks and media streams of outbound calls
	// (default http.DefaultClient).
	HTTPClient *http.Client
	// InsecureStreamURL lets outbound calls open ws:// <Stream> URLs; real Twilio dials
	// only wss://, but Handset under test serves plain http.
	InsecureStreamURL bool
	// Clock paces outbound calls: ringing, pauses, holding and media (default the wall
	// clock). Now defaults to its Now.
	Clock clock.Clock
}

// Number is one incoming phone number as the fake holds it. In Options, only PhoneNumber
// is required: SID defaults to a PN SID derived from the number, FriendlyName to the
// number formatted the way Twilio does ("(415) 555-0100" for North American numbers), and
// the methods to POST.
type Number struct {
	SID                  string // PN + 32 hex digits
	PhoneNumber          string // E.164, like +14155550100
	FriendlyName         string
	VoiceURL             string
	VoiceMethod          string
	VoiceFallbackURL     string
	VoiceFallbackMethod  string
	VoiceApplicationSID  string // AP…; when set, Twilio ignores VoiceURL
	StatusCallback       string
	StatusCallbackMethod string
	DateCreated          time.Time
	DateUpdated          time.Time
}

// Request is what the fake recorded about one request it answered. The password of the
// basic auth is never recorded.
type Request struct {
	Method        string
	Path          string     // URL path as sent
	Query         url.Values // query parameters
	Form          url.Values // form-encoded body fields (POST)
	User          string     // basic-auth user name; "" when the request had no basic auth
	Authenticated bool       // the credentials matched the account
	Status        int        // HTTP status of the answer; 0 when the client gave up first
	Code          int        // Twilio error code of the answer; 0 for a success
}

// Fault makes matching requests stall or fail, to test timeouts and error handling.
type Fault struct {
	// Method and Path select the requests: an empty Method matches any, and Path matches
	// when it occurs anywhere in the URL path ("" matches every path).
	Method, Path string
	// Delay holds the answer back; the request's own cancellation cuts it short.
	Delay time.Duration
	// Status, when non-zero, is the answer's status, with a Twilio error body (code 20500
	// for 5xx, 20429 for 429, 20003 for 401 and 403, 20404 for 404, else the status).
	// Zero answers the request normally after Delay.
	Status int
	// After lets this many matching requests through untouched first (to fail the second
	// page of a list, say).
	After int
	// Times is how many requests the fault applies to; 0 means every one.
	Times int
}

// Server is the fake API. It is an http.Handler; serve it with httptest or net/http.
// Safe for concurrent use.
type Server struct {
	sid, token         string
	friendly, typ, sts string
	maxPage            int
	now                func() time.Time
	created            time.Time
	log                *slog.Logger
	mux                *http.ServeMux

	mu       sync.Mutex
	numbers  []*Number // in list order
	requests []Request
	faults   []*Fault
	calls    callTable // the Calls resource; its maps are guarded by mu too
}

// New returns a fake Twilio API holding o's account and numbers. It panics on Options
// that no test means: a malformed account SID, a number that is not E.164, a malformed or
// repeated SID, or a repeated phone number.
func New(o Options) *Server {
	s := &Server{
		sid:      cmpOr(o.AccountSID, DefaultAccountSID),
		token:    cmpOr(o.AuthToken, DefaultAuthToken),
		friendly: cmpOr(o.FriendlyName, DefaultFriendlyName),
		typ:      cmpOr(o.Type, "Full"),
		sts:      cmpOr(o.Status, "active"),
		maxPage:  o.MaxPageSize,
		now:      o.Now,
		log:      o.Logger,
		mux:      http.NewServeMux(),
	}
	if s.maxPage <= 0 || s.maxPage > MaxPageSize {
		s.maxPage = MaxPageSize
	}
	if s.now == nil {
		s.now = time.Now
		if o.Clock != nil {
			s.now = o.Clock.Now
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if !ValidSID(s.sid, "AC") {
		panic(fmt.Sprintf("faketwilio: account SID %q is not AC followed by 32 hex digits", s.sid))
	}
	s.created = s.now().UTC().Truncate(time.Second)
	seenSID, seenNumber := map[string]bool{}, map[string]bool{}
	for _, n := range o.Numbers {
		if !validE164(n.PhoneNumber) {
			panic(fmt.Sprintf("faketwilio: phone number %q is not E.164 (+ and 8 to 15 digits)", n.PhoneNumber))
		}
		if n.SID == "" {
			n.SID = NumberSID(n.PhoneNumber)
		}
		if !ValidSID(n.SID, "PN") {
			panic(fmt.Sprintf("faketwilio: number SID %q is not PN followed by 32 hex digits", n.SID))
		}
		if seenSID[n.SID] || seenNumber[n.PhoneNumber] {
			panic(fmt.Sprintf("faketwilio: number %s (%s) given twice", n.PhoneNumber, n.SID))
		}
		seenSID[n.SID], seenNumber[n.PhoneNumber] = true, true
		n.FriendlyName = cmpOr(n.FriendlyName, FriendlyName(n.PhoneNumber))
		n.VoiceMethod = cmpOr(strings.ToUpper(n.VoiceMethod), http.MethodPost)
		n.VoiceFallbackMethod = cmpOr(strings.ToUpper(n.VoiceFallbackMethod), http.MethodPost)
		n.StatusCallbackMethod = cmpOr(strings.ToUpper(n.StatusCallbackMethod), http.MethodPost)
		if n.DateCreated.IsZero() {
			n.DateCreated = s.created
		}
		if n.DateUpdated.IsZero() {
			n.DateUpdated = n.DateCreated
		}
		s.numbers = append(s.numbers, &n)
	}

	s.mux.HandleFunc(APIVersion+"/Accounts/{account}", s.account)
	s.mux.HandleFunc(APIVersion+"/Accounts/{account}/IncomingPhoneNumbers.json", s.numberList)
	s.mux.HandleFunc(APIVersion+"/Accounts/{account}/IncomingPhoneNumbers/{number}", s.numberInstance)
	s.initCalls(o)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.notFound(w, r) })
	return s
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// AccountSID is the account the fake serves.
func (s *Server) AccountSID() string { return s.sid }

// AuthToken is the auth token the fake accepts.
func (s *Server) AuthToken() string { return s.token }

// Requests returns a snapshot of the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Query, r.Form = cloneValues(r.Query), cloneValues(r.Form)
		out[i] = r
	}
	return out
}

// Numbers returns the account's numbers as they are now, in list order.
func (s *Server) Numbers() []Number {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Number, len(s.numbers))
	for i, n := range s.numbers {
		out[i] = *n
	}
	return out
}

// Number returns the number whose phone number or SID is key.
func (s *Server) Number(key string) (Number, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.numbers {
		if n.PhoneNumber == key || n.SID == key {
			return *n, true
		}
	}
	return Number{}, false
}

// AddFault makes the requests f selects stall or fail. Faults are tried in the order
// added; the first that matches a request applies to it.
func (s *Server) AddFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(rec, r.Body, maxBody)
		if err := r.ParseForm(); err == nil {
			req.Form = cloneValues(r.PostForm)
		}
	}
	user, pass, hasAuth := r.BasicAuth()
	if hasAuth {
		req.User = user
	}
	req.Authenticated = hasAuth && user == s.sid &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.token)) == 1
	defer func() {
		req.Status, req.Code = rec.status, rec.code
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		s.log.Debug("fake twilio request", "method", req.Method, "path", req.Path,
			"status", req.Status, "code", req.Code)
	}()

	if f, ok := s.fault(r); ok {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				rec.status = 0 // the client went away: no answer
				return
			}
		}
		if f.Status != 0 {
			writeError(rec, f.Status, faultCode(f.Status), http.StatusText(f.Status))
			return
		}
	}
	if !req.Authenticated {
		rec.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
		writeError(rec, http.StatusUnauthorized, CodeAuthenticate, "Authenticate")
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// maxBody bounds the request bodies the fake reads.
const maxBody = 1 << 20

// fault returns the first fault matching r and uses one of its Times.
func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Method != "" && f.Method != r.Method) || !strings.Contains(r.URL.Path, f.Path) {
			continue
		}
		if f.After > 0 {
			f.After--
			continue
		}
		out := *f
		if f.Times > 0 {
			if f.Times--; f.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return out, true
	}
	return Fault{}, false
}

func faultCode(status int) int {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return CodeAuthenticate
	case status == http.StatusNotFound:
		return CodeNotFound
	case status == http.StatusTooManyRequests:
		return CodeTooManyRequests
	case status >= 500:
		return CodeInternalError
	}
	return status
}

// recorder remembers the status and Twilio code of the answer.
type recorder struct {
	http.ResponseWriter
	status, code int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// errorBody is Twilio's JSON error answer.
type errorBody struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	if rec, ok := w.(*recorder); ok {
		rec.code = code
	}
	writeJSON(w, status, errorBody{Code: code, Message: msg,
		MoreInfo: "https://www.twilio.com/docs/errors/" + strconv.Itoa(code), Status: status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, CodeNotFound,
		fmt.Sprintf("The requested resource %s was not found", r.URL.Path))
}

func methodNotAllowed(w http.ResponseWriter, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "Method not allowed")
}

// jsonName strips the ".json" of a path segment; ok is false without one.
func jsonName(seg string) (string, bool) {
	name, ok := strings.CutSuffix(seg, ".json")
	return name, ok && name != ""
}

// ownAccount reports whether the {account} path segment names the authenticated account,
// answering 401 otherwise as Twilio does for another account's resources.
func (s *Server) ownAccount(w http.ResponseWriter, account string) bool {
	if account != s.sid {
		w.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
		writeError(w, http.StatusUnauthorized, CodeAuthenticate, "Authenticate")
		return false
	}
	return true
}

// account answers GET /2010-04-01/Accounts/{AccountSid}.json.
func (s *Server) account(w http.ResponseWriter, r *http.Request) {
	sid, ok := jsonName(r.PathValue("account"))
	if !ok {
		s.notFound(w, r)
		return
	}
	if !s.ownAccount(w, sid) {
		return
	}
	if r.Method != http.MethodGet {
		methodNotAllowed(w, http.MethodGet, http.MethodPost)
		return
	}
	base := APIVersion + "/Accounts/" + s.sid
	writeJSON(w, http.StatusOK, map[string]any{
		"auth_token":        s.token, // the real resource carries it too
		"date_created":      twilioTime(s.created),
		"date_updated":      twilioTime(s.created),
		"friendly_name":     s.friendly,
		"owner_account_sid": s.sid,
		"sid":               s.sid,
		"status":            s.sts,
		"type":              s.typ,
		"uri":               base + ".json",
		"subresource_uris": map[string]string{
			"calls":                  base + "/Calls.json",
			"incoming_phone_numbers": base + "/IncomingPhoneNumbers.json",
		},
	})
}

// numberList answers GET …/IncomingPhoneNumbers.json with Twilio's paging.
func (s *Server) numberList(w http.ResponseWriter, r *http.Request) {
	if !s.ownAccount(w, r.PathValue("account")) {
		return
	}
	if r.Method != http.MethodGet {
		methodNotAllowed(w, http.MethodGet, http.MethodPost)
		return
	}
	q := r.URL.Query()
	size := DefaultPageSize
	if n, err := strconv.Atoi(q.Get("PageSize")); err == nil && n > 0 {
		size = n
	}
	size = min(size, s.maxPage)
	page := 0
	if n, err := strconv.Atoi(q.Get("Page")); err == nil && n > 0 {
		page = n
	}
	filter := q.Get("PhoneNumber")

	s.mu.Lock()
	var matched []Number
	for _, n := range s.numbers {
		if matchNumber(filter, n.PhoneNumber) {
			matched = append(matched, *n)
		}
	}
	s.mu.Unlock()

	start := page * size
	// A PageToken (PA<sid>: after that number) wins over Page, as on Twilio.
	if tok, ok := strings.CutPrefix(q.Get("PageToken"), "PA"); ok {
		if i := slices.IndexFunc(matched, func(n Number) bool { return n.SID == tok }); i >= 0 {
			start = i + 1
		}
	}
	start = min(start, len(matched))
	end := min(start+size, len(matched))
	items := make([]map[string]any, 0, end-start)
	for _, n := range matched[start:end] {
		items = append(items, s.numberJSON(n))
	}

	base := APIVersion + "/Accounts/" + s.sid + "/IncomingPhoneNumbers.json"
	pageURI := func(p int, token string) string {
		v := url.Values{"PageSize": {strconv.Itoa(size)}, "Page": {strconv.Itoa(p)}}
		if filter != "" {
			v.Set("PhoneNumber", filter)
		}
		if token != "" {
			v.Set("PageToken", token)
		}
		return base + "?" + v.Encode()
	}
	var next, prev any // JSON null when there is no such page
	if end < len(matched) {
		next = pageURI(page+1, "PA"+matched[end-1].SID)
	}
	if page > 0 {
		token := ""
		if start < len(matched) {
			token = "PB" + matched[start].SID
		}
		prev = pageURI(page-1, token)
	}
	last := start
	if end > start {
		last = end - 1
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"incoming_phone_numbers": items,
		"page":                   page,
		"page_size":              size,
		"start":                  start,
		"end":                    last,
		"uri":                    pageURI(page, q.Get("PageToken")),
		"first_page_uri":         pageURI(0, ""),
		"next_page_uri":          next,
		"previous_page_uri":      prev,
	})
}

// matchNumber applies the PhoneNumber filter: Twilio matches partial numbers, and * stands
// for any one digit. Only digits and * of the filter count.
func matchNumber(filter, number string) bool {
	var pat []byte
	for i := 0; i < len(filter); i++ {
		if c := filter[i]; c == '*' || ('0' <= c && c <= '9') {
			pat = append(pat, c)
		}
	}
	if len(pat) == 0 {
		return filter == "" || strings.Contains(number, filter)
	}
	digits := strings.TrimPrefix(number, "+")
	for off := 0; off+len(pat) <= len(digits); off++ {
		ok := true
		for i, c := range pat {
			if c != '*' && c != digits[off+i] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// numberInstance answers GET and POST …/IncomingPhoneNumbers/{PN}.json.
func (s *Server) numberInstance(w http.ResponseWriter, r *http.Request) {
	if !s.ownAccount(w, r.PathValue("account")) {
		return
	}
	sid, ok := jsonName(r.PathValue("number"))
	if !ok {
		s.notFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodGet:
		n, found := s.Number(sid)
		if !found || n.SID != sid {
			s.notFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, s.numberJSON(n))
	case http.MethodPost:
		s.update(w, r, sid)
	default:
		methodNotAllowed(w, http.MethodGet, http.MethodPost, http.MethodDelete)
	}
}

// update applies a form-encoded update: a field present in the form is set (an empty
// value clears it), an absent one is left alone. Nothing changes unless every field is
// valid.
func (s *Server) update(w http.ResponseWriter, r *http.Request, sid string) {
	if _, found := s.Number(sid); !found || !strings.HasPrefix(sid, "PN") {
		s.notFound(w, r)
		return
	}
	form := r.PostForm
	has := func(k string) (string, bool) {
		v, ok := form[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return strings.TrimSpace(v[0]), true
	}
	for _, k := range []string{"VoiceUrl", "VoiceFallbackUrl", "StatusCallback"} {
		if v, ok := has(k); ok && v != "" && !callbackURL(v) {
			writeError(w, http.StatusBadRequest, CodeInvalidURL,
				fmt.Sprintf("%s is not a valid URL: %q is not a fully qualified http or https URL", k, v))
			return
		}
	}
	for _, k := range []string{"VoiceMethod", "VoiceFallbackMethod", "StatusCallbackMethod"} {
		if v, ok := has(k); ok && v != "" && !strings.EqualFold(v, "GET") && !strings.EqualFold(v, "POST") {
			writeError(w, http.StatusBadRequest, CodeInvalidMethod,
				fmt.Sprintf("%s is not valid: %q is not GET or POST", k, v))
			return
		}
	}
	if v, ok := has("VoiceApplicationSid"); ok && v != "" && !ValidSID(v, "AP") {
		writeError(w, http.StatusBadRequest, CodeInvalidApplication,
			fmt.Sprintf("VoiceApplicationSid %q is not a valid Application SID", v))
		return
	}

	method := func(v string) string { return cmpOr(strings.ToUpper(v), http.MethodPost) }
	s.mu.Lock()
	i := slices.IndexFunc(s.numbers, func(n *Number) bool { return n.SID == sid })
	if i < 0 { // gone in the meantime
		s.mu.Unlock()
		s.notFound(w, r)
		return
	}
	n := s.numbers[i]
	set := func(k string, apply func(v string)) {
		if v, ok := has(k); ok {
			apply(v)
		}
	}
	set("FriendlyName", func(v string) { n.FriendlyName = cmpOr(v, FriendlyName(n.PhoneNumber)) })
	set("VoiceUrl", func(v string) { n.VoiceURL = v })
	set("VoiceMethod", func(v string) { n.VoiceMethod = method(v) })
	set("VoiceFallbackUrl", func(v string) { n.VoiceFallbackURL = v })
	set("VoiceFallbackMethod", func(v string) { n.VoiceFallbackMethod = method(v) })
	set("VoiceApplicationSid", func(v string) { n.VoiceApplicationSID = v })
	set("StatusCallback", func(v string) { n.StatusCallback = v })
	set("StatusCallbackMethod", func(v string) { n.StatusCallbackMethod = method(v) })
	n.DateUpdated = s.now().UTC().Truncate(time.Second)
	out := *n
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.numberJSON(out))
}

// callbackURL reports whether v is an absolute http(s) URL with a host.
func callbackURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != ""
}

// numberJSON is the IncomingPhoneNumber resource in Twilio's JSON form.
func (s *Server) numberJSON(n Number) map[string]any {
	return map[string]any{
		"account_sid":            s.sid,
		"address_requirements":   "none",
		"address_sid":            nil,
		"api_version":            "2010-04-01",
		"beta":                   false,
		"bundle_sid":             nil,
		"capabilities":           map[string]bool{"voice": true, "sms": true, "mms": true, "fax": false},
		"date_created":           twilioTime(n.DateCreated),
		"date_updated":           twilioTime(n.DateUpdated),
		"emergency_address_sid":  nil,
		"emergency_status":       "Inactive",
		"friendly_name":          n.FriendlyName,
		"identity_sid":           nil,
		"origin":                 "twilio",
		"phone_number":           n.PhoneNumber,
		"sid":                    n.SID,
		"sms_application_sid":    "",
		"sms_fallback_method":    "POST",
		"sms_fallback_url":       "",
		"sms_method":             "POST",
		"sms_url":                "",
		"status":                 "in-use",
		"status_callback":        nullable(n.StatusCallback),
		"status_callback_method": n.StatusCallbackMethod,
		"trunk_sid":              nil,
		"uri":                    APIVersion + "/Accounts/" + s.sid + "/IncomingPhoneNumbers/" + n.SID + ".json",
		"voice_application_sid":  n.VoiceApplicationSID,
		"voice_caller_id_lookup": false,
		"voice_fallback_method":  n.VoiceFallbackMethod,
		"voice_fallback_url":     nullable(n.VoiceFallbackURL),
		"voice_method":           n.VoiceMethod,
		"voice_receive_mode":     "voice",
		"voice_url":              nullable(n.VoiceURL),
	}
}

// nullable is v, or JSON null when v is empty: Twilio sends null for unset URLs.
func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// twilioTime formats t as Twilio's REST API does (RFC 2822, UTC).
func twilioTime(t time.Time) string { return t.UTC().Format(time.RFC1123Z) }

// NumberSID is the PN SID the fake gives phone number e164 when Options leave it out.
func NumberSID(e164 string) string {
	sum := sha256.Sum256([]byte("faketwilio number " + e164))
	return "PN" + hex.EncodeToString(sum[:16])
}

// ValidSID reports whether sid is prefix followed by 32 hex digits, the form of every
// Twilio SID (AC accounts, PN numbers, AP applications, CA calls).
func ValidSID(sid, prefix string) bool {
	rest, ok := strings.CutPrefix(sid, prefix)
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// FriendlyName is the friendly name Twilio gives a new number: "(415) 555-0100" for North
// American numbers, the E.164 number itself otherwise.
func FriendlyName(e164 string) string {
	if d, ok := strings.CutPrefix(e164, "+1"); ok && len(d) == 10 {
		return "(" + d[:3] + ") " + d[3:6] + "-" + d[6:]
	}
	return e164
}

func validE164(v string) bool {
	d, ok := strings.CutPrefix(v, "+")
	if !ok || len(d) < 8 || len(d) > 15 || d[0] == '0' {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
