package telnyxsim

import (
	"net/http"
	"strconv"
)

// MaxPageSize is the largest page[size] the numbers list answers.
const MaxPageSize = 250

// numberLocked is the account's number e164; nil if none.
func (s *Server) numberLocked(e164 string) *Number {
	for _, n := range s.numbers {
		if n.PhoneNumber == e164 {
			return n
		}
	}
	return nil
}

// Numbers are the account's numbers as they stand.
func (s *Server) Numbers() []Number {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Number, len(s.numbers))
	for i, n := range s.numbers {
		out[i] = *n
	}
	return out
}

// WebhookURL is the application's webhook_event_url as it stands.
func (s *Server) WebhookURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.webhookURL
}

// SetWebhookURL changes the application's webhook_event_url, as a person would in the
// portal.
func (s *Server) SetWebhookURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.webhookURL = u
	s.changedLocked()
}

// SetWebhookAPIVersion changes the application's webhook_api_version ("1" or "2"), as a
// person would in the portal.
func (s *Server) SetWebhookAPIVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.apiVersion = v
	s.changedLocked()
}

// numberJSON is a number as the API shows it.
func numberJSON(n *Number) map[string]any {
	return map[string]any{"record_type": "phone_number", "id": n.ID, "phone_number": n.PhoneNumber,
		"connection_id": n.ConnectionID, "connection_name": n.ConnectionName, "status": n.Status}
}

// listNumbers is GET /phone_numbers with page[number], page[size] and
// filter[phone_number] (UNCONFIRMED pagination names, as meta's).
func (s *Server) listNumbers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, size := 1, 20
	if v := q.Get("page[number]"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, CodeInvalidBody, "Invalid value", "page[number] must be a positive integer.")
			return
		}
		page = n
	}
	if v := q.Get("page[size]"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			writeError(w, http.StatusBadRequest, CodeInvalidBody, "Invalid value", "page[size] must be 1 to 250.")
			return
		}
		size = n
	}
	filter := q.Get("filter[phone_number]")
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*Number
	for _, n := range s.numbers {
		if filter == "" || n.PhoneNumber == filter {
			match = append(match, n)
		}
	}
	pages := max((len(match)+size-1)/size, 1)
	data := []map[string]any{}
	for i := (page - 1) * size; i < len(match) && i < page*size; i++ {
		data = append(data, numberJSON(match[i]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]int{"total_pages": pages,
		"total_results": len(match), "page_number": page, "page_size": size}})
}

// updateNumber is PATCH /phone_numbers/{id}: its connection_id.
func (s *Server) updateNumber(w http.ResponseWriter, r *http.Request) {
	var b struct {
		ConnectionID *string `json:"connection_id"`
	}
	if !readJSON(r, &b) {
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid request body", "The body is not a JSON object.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n *Number
	for _, m := range s.numbers {
		if m.ID == r.PathValue("id") {
			n = m
		}
	}
	switch {
	case n == nil:
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No phone number "+r.PathValue("id")+".")
	case b.ConnectionID != nil && *b.ConnectionID != "" && *b.ConnectionID != s.opts.ConnectionID:
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid value", "No connection "+*b.ConnectionID+".")
	default:
		if b.ConnectionID != nil {
			n.ConnectionID, n.ConnectionName = *b.ConnectionID, ""
			if n.ConnectionID != "" {
				n.ConnectionName = s.app.name
			}
		}
		s.changedLocked()
		writeJSON(w, http.StatusOK, map[string]any{"data": numberJSON(n)})
	}
}

// applicationJSON is the application as the API shows it.
func (s *Server) applicationJSON() map[string]any {
	return map[string]any{"data": map[string]any{"record_type": "call_control_application", "id": s.opts.ConnectionID,
		"application_name": s.app.name, "webhook_event_url": s.app.webhookURL,
		"webhook_event_failover_url": s.app.failoverURL, "webhook_api_version": s.app.apiVersion,
		"webhook_timeout_secs": 25, "first_command_timeout": true,
		"first_command_timeout_secs": int(s.opts.FirstCommandTimeout / 1e9), "active": true}}
}

// getApplication is GET /call_control_applications/{id}.
func (s *Server) getApplication(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.PathValue("id") != s.opts.ConnectionID {
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No Call Control Application "+r.PathValue("id")+".")
		return
	}
	writeJSON(w, http.StatusOK, s.applicationJSON())
}

// updateApplication is PATCH /call_control_applications/{id}: its webhook fields.
func (s *Server) updateApplication(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name        *string `json:"application_name"`
		WebhookURL  *string `json:"webhook_event_url"`
		FailoverURL *string `json:"webhook_event_failover_url"`
		APIVersion  *string `json:"webhook_api_version"`
	}
	if !readJSON(r, &b) {
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid request body", "The body is not a JSON object.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.PathValue("id") != s.opts.ConnectionID:
		writeError(w, http.StatusNotFound, CodeNotFound, "Resource not found", "No Call Control Application "+r.PathValue("id")+".")
		return
	case b.WebhookURL != nil && !httpURL(*b.WebhookURL):
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid value", "webhook_event_url must be an http(s) URL.")
		return
	case b.APIVersion != nil && *b.APIVersion != "1" && *b.APIVersion != "2":
		writeError(w, http.StatusUnprocessableEntity, CodeInvalidBody, "Invalid value", "webhook_api_version must be 1 or 2.")
		return
	}
	if b.Name != nil {
		s.app.name = *b.Name
	}
	if b.WebhookURL != nil {
		s.app.webhookURL = *b.WebhookURL
	}
	if b.FailoverURL != nil {
		s.app.failoverURL = *b.FailoverURL
	}
	if b.APIVersion != nil {
		s.app.apiVersion = *b.APIVersion
	}
	s.changedLocked()
	writeJSON(w, http.StatusOK, s.applicationJSON())
}

// balance is GET /balance (field names per a third-party page: UNCONFIRMED).
func (s *Server) balance(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]string{"record_type": "balance", "balance": "100.00",
		"available_credit": "100.00", "currency": "USD", "credit_limit": "0.00", "pending": "0.00"}})
}
