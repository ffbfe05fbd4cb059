package fakevapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakevapi"
)

// server is a custom LLM that answers every turn with words, one chunk each, every pause.
type server struct {
	words []string
	pause time.Duration

	mu   sync.Mutex
	reqs []*http.Request
	gone []time.Time // when each request's context ended before its reply did
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(s string) {
		_, _ = io.WriteString(w, s)
		w.(http.Flusher).Flush()
	}
	send(": hello\n\n")
	send(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n")
	for _, word := range s.words {
		select {
		case <-r.Context().Done():
			s.mu.Lock()
			s.gone = append(s.gone, time.Now())
			s.mu.Unlock()
			return
		case <-time.After(s.pause):
		}
		b, _ := json.Marshal(word)
		send(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}` + "\n\n")
	}
	send("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n")
	send("data: [DONE]\n\n")
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *server) goneAt() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gone)
}

func start(t *testing.T, s http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// A turn is POST {url}/chat/completions with the bearer credential, the model's headers,
// the chat fields, the assistant's metadata and the call, phoneNumber and customer objects;
// its streamed reply joins the conversation the next turn sends.
func TestATurnIsVapisRequest(t *testing.T) {
	srv := &server{words: []string{"Hello ", "there."}}
	url := start(t, srv)
	temp := 0.3
	call := fakevapi.New(fakevapi.Options{URL: url, APIKey: "sk-bridge", Model: "handset",
		Headers:      map[string]string{"X-Tenant": "acme", "Authorization": "Bearer not-this"},
		SystemPrompt: "Be brief.", FirstMessage: "Hi, how can I help?", Temperature: &temp,
		Metadata: map[string]any{"tier": "gold"},
		Call: fakevapi.CallInfo{ID: "call-1", AssistantID: "asst-1",
			Customer: &fakevapi.Customer{Number: "+15551234567"}},
		PhoneNumber: &fakevapi.PhoneNumber{ID: "pn-1", Number: "+15557654321", Provider: "twilio"}})
	reply, err := call.Say(context.Background(), "Are you open?")
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hello there." || len(reply.Deltas) != 2 || !reply.Done || reply.FinishReason != "stop" || reply.Interrupted {
		t.Errorf("reply %+v", reply)
	}
	reqs := call.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	q := reqs[0]
	if q.Method != http.MethodPost || q.URL != url+"/chat/completions" {
		t.Errorf("%s %s", q.Method, q.URL)
	}
	if got := srv.requests()[0]; got.URL.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer sk-bridge" ||
		got.Header.Get("Content-Type") != "application/json" || got.Header.Get("X-Tenant") != "acme" {
		t.Errorf("the server saw %s with headers %v", got.URL.Path, got.Header)
	}
	var body struct {
		Model       string
		Messages    []fakevapi.Message
		Temperature float64
		MaxTokens   int `json:"max_tokens"`
		Stream      bool
		Metadata    map[string]any
		Call        fakevapi.CallInfo
		Customer    *fakevapi.Customer
		PhoneNumber *fakevapi.PhoneNumber
	}
	if err := q.Decode(&body); err != nil {
		t.Fatal(err)
	}
	wantMsgs := []fakevapi.Message{{Role: "system", Content: "Be brief."}, {Role: "assistant", Content: "Hi, how can I help?"},
		{Role: "user", Content: "Are you open?"}}
	if body.Model != "handset" || !slices.Equal(body.Messages, wantMsgs) || body.Temperature != 0.3 ||
		body.MaxTokens != fakevapi.DefaultMaxTokens || !body.Stream || body.Metadata["tier"] != "gold" {
		t.Errorf("body %+v", body)
	}
	c := body.Call
	if c.ID != "call-1" || c.OrgID == "" || c.Type != fakevapi.TypeInbound || c.Status != "in-progress" || c.AssistantID != "asst-1" ||
		c.PhoneNumberID != "pn-1" || c.Customer == nil || c.Customer.Number != "+15551234567" || c.CreatedAt == "" {
		t.Errorf("call %+v", c)
	}
	if body.Customer == nil || body.Customer.Number != "+15551234567" || body.PhoneNumber == nil || body.PhoneNumber.Number != "+15557654321" {
		t.Errorf("customer %+v, phone number %+v", body.Customer, body.PhoneNumber)
	}
	// the next turn carries the reply
	if _, err := call.Say(context.Background(), "Great."); err != nil {
		t.Fatal(err)
	}
	if err := call.Requests()[1].Decode(&body); err != nil {
		t.Fatal(err)
	}
	wantMsgs = append(wantMsgs, fakevapi.Message{Role: "assistant", Content: "Hello there."}, fakevapi.Message{Role: "user", Content: "Great."})
	if !slices.Equal(body.Messages, wantMsgs) || !slices.Equal(call.Messages(), append(wantMsgs[1:], fakevapi.Message{Role: "assistant", Content: "Hello there."})) {
		t.Errorf("second turn's messages %+v, conversation %+v", body.Messages, call.Messages())
	}
}

// "off" sends the chat fields alone; "destructured" puts the metadata's fields at the top
// level, without letting one replace a chat field. A web call has no customer, and no
// credential sends no Authorization.
func TestMetadataSendModes(t *testing.T) {
	url := start(t, &server{words: []string{"Yes."}})
	for _, tc := range []struct {
		mode       string
		want, none []string
	}{
		{fakevapi.MetadataOff, []string{"model", "messages", "stream"}, []string{"metadata", "call", "customer", "phoneNumber", "tier"}},
		{fakevapi.MetadataDestructured, []string{"call", "tier"}, []string{"metadata", "customer"}},
		{fakevapi.MetadataVariable, []string{"call", "metadata"}, []string{"customer", "tier"}},
	} {
		call := fakevapi.New(fakevapi.Options{URL: url, MetadataSendMode: tc.mode,
			Metadata: map[string]any{"tier": "gold", "model": "not-this"}})
		if _, err := call.Say(context.Background(), "Hi"); err != nil {
			t.Fatal(err)
		}
		q := call.Requests()[0]
		var body map[string]any
		if err := q.Decode(&body); err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.want {
			if _, ok := body[k]; !ok {
				t.Errorf("%s: no %q in %s", tc.mode, k, q.Body)
			}
		}
		for _, k := range tc.none {
			if _, ok := body[k]; ok {
				t.Errorf("%s: %q in %s", tc.mode, k, q.Body)
			}
		}
		if body["model"] != fakevapi.DefaultModel || q.Header.Get("Authorization") != "" {
			t.Errorf("%s: model %v, Authorization %q", tc.mode, body["model"], q.Header.Get("Authorization"))
		}
		if call.Info().Type != fakevapi.TypeWeb {
			t.Errorf("%s: type %q", tc.mode, call.Info().Type)
		}
	}
}

// A barge-in aborts the request once enough of the reply came, and keeps what was heard.
func TestBargeInAbortsTheRequest(t *testing.T) {
	srv := &server{words: strings.SplitAfter("I heard you say: hello. What else can I do for you?", " "), pause: 30 * time.Millisecond}
	call := fakevapi.New(fakevapi.Options{URL: start(t, srv)})
	reply, err := call.BargeIn(context.Background(), "hello", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Interrupted || reply.AbortedAt.IsZero() || reply.Text != "I heard yo" || reply.Done || len(reply.Deltas) != 3 {
		t.Fatalf("reply %+v", reply)
	}
	var gone []time.Time
	for deadline := time.Now().Add(2 * time.Second); len(gone) == 0 && time.Now().Before(deadline); gone = srv.goneAt() {
		time.Sleep(5 * time.Millisecond)
	}
	if len(gone) != 1 || gone[0].Sub(reply.AbortedAt) > 500*time.Millisecond {
		t.Errorf("the server saw the request go at %v, aborted at %v", gone, reply.AbortedAt)
	}
	want := []fakevapi.Message{{Role: "user", Content: "hello"}, {Role: "assistant", Content: "I heard yo"}}
	if !slices.Equal(call.Messages(), want) {
		t.Errorf("conversation %+v", call.Messages())
	}
	// a reply shorter than the barge-in point ends whole
	srv.pause = 0
	reply, err = call.BargeIn(context.Background(), "again", 1000)
	if err != nil || reply.Interrupted || !reply.Done || reply.Text != "I heard you say: hello. What else can I do for you?" {
		t.Errorf("a short reply: %+v, %v", reply, err)
	}
}

// An error status, an error in the stream, an answer that is not a stream, and a server
// silent past the model's timeout are errors; the caller's words stay in the conversation.
func TestFailedTurns(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/401/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"wrong key","type":"authentication_error","param":null,"code":"invalid_api_key"}}`)
	})
	mux.HandleFunc("/midway/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"content":"Hi"}}]}`+"\n\n"+`data: {"error":{"message":"runtime failed","type":"server_error","code":null}}`+"\n\n")
	})
	mux.HandleFunc("/json/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Hi"}}]}`)
	})
	mux.HandleFunc("/silent/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	check := func(path string, want func(error) bool) {
		t.Helper()
		call := fakevapi.New(fakevapi.Options{URL: srv.URL + path, APIKey: "k", Timeout: 200 * time.Millisecond})
		_, err := call.Say(context.Background(), "Hi")
		if !want(err) {
			t.Errorf("%s: %v", path, err)
		}
		if msgs := call.Messages(); len(msgs) != 1 || msgs[0].Role != "user" {
			t.Errorf("%s: conversation %+v", path, msgs)
		}
	}
	apiErr := func(status int, code string) func(error) bool {
		return func(err error) bool {
			var e *fakevapi.Error
			return errors.As(err, &e) && e.Status == status && e.Code == code
		}
	}
	check("/401", apiErr(http.StatusUnauthorized, "invalid_api_key"))
	check("/midway", apiErr(http.StatusOK, ""))
	check("/json", func(err error) bool { return err != nil && strings.Contains(err.Error(), "not an event stream") })
	begin := time.Now()
	check("/silent", func(err error) bool { return errors.Is(err, fakevapi.ErrTimeout) })
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	if _, err := fakevapi.New(fakevapi.Options{}).Say(context.Background(), "Hi"); err == nil {
		t.Error("no URL: no error")
	}
}
