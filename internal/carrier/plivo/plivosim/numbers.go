package plivosim

import (
	"net/http"
	"net/url"
	"strconv"
)

func (s *Server) account(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"api_id": newUUID(), "auth_id": s.id, "name": DefaultName,
		"account_type": s.accType, "cash_credits": "10.00000", "state": "active", // state: unconfirmed field
		"resource_uri": "/v1/Account/" + s.id + "/"})
}

// maxLimit is the most numbers one page holds, as on Plivo.
const maxLimit = 20

func (s *Server) numberList(w http.ResponseWriter, r *http.Request) {
	limit, offset := maxLimit, 0
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, "limit must be 1 to 20")
			return
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "offset must be a non-negative integer")
			return
		}
		offset = n
	}
	s.mu.Lock()
	total := len(s.numbers)
	objects := []map[string]any{}
	for i := offset; i < total && i < offset+limit; i++ {
		objects = append(objects, s.numberJSON(s.numbers[i]))
	}
	s.mu.Unlock()
	var next any
	if offset+limit < total {
		next = "/v1/Account/" + s.id + "/Number/?limit=" + strconv.Itoa(limit) + "&offset=" + strconv.Itoa(offset+limit)
	}
	writeJSON(w, http.StatusOK, map[string]any{"api_id": newUUID(),
		"meta":    map[string]any{"limit": limit, "offset": offset, "total_count": total, "next": next, "previous": nil},
		"objects": objects})
}

// numberLocked finds a number by Plivo's writing of it: digits without "+".
func (s *Server) numberLocked(raw string) *Number {
	if !digits(raw) {
		return nil
	}
	for _, n := range s.numbers {
		if plain(n.Number) == raw {
			return n
		}
	}
	return nil
}

// withLocked runs fn, under the lock, on what find returns; 404 naming what when nil.
func withLocked[T any](s *Server, w http.ResponseWriter, what string, find func() *T, fn func(*T)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := find()
	if v == nil {
		writeError(w, http.StatusNotFound, what+" not found")
		return
	}
	fn(v)
}

// withNumber runs fn, under the lock, on the number the path names; 404 when none.
func (s *Server) withNumber(w http.ResponseWriter, r *http.Request, fn func(n *Number)) {
	withLocked(s, w, "number", func() *Number { return s.numberLocked(r.PathValue("number")) }, fn)
}

// withApp runs fn, under the lock, on the application the path names; 404 when none.
func (s *Server) withApp(w http.ResponseWriter, r *http.Request, fn func(a *Application)) {
	withLocked(s, w, "application", func() *Application { return s.apps[r.PathValue("app")] }, fn)
}

func (s *Server) numberGet(w http.ResponseWriter, r *http.Request) {
	s.withNumber(w, r, func(n *Number) { writeJSON(w, http.StatusOK, s.numberJSON(n)) })
}

func (s *Server) numberLink(w http.ResponseWriter, r *http.Request) {
	s.withNumber(w, r, func(n *Number) {
		if id, ok := r.PostForm["app_id"]; ok {
			if id[0] != "" && s.apps[id[0]] == nil {
				writeError(w, http.StatusNotFound, "application not found")
				return
			}
			n.AppID = id[0]
		}
		if a, ok := r.PostForm["alias"]; ok {
			n.Alias = a[0]
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"api_id": newUUID(), "message": "changed"})
	})
}

func (s *Server) numberJSON(n *Number) map[string]any {
	out := map[string]any{"number": plain(n.Number), "alias": n.Alias, "voice_enabled": true,
		"application": nil, "resource_uri": "/v1/Account/" + s.id + "/Number/" + plain(n.Number) + "/"}
	if n.AppID != "" {
		out["application"] = "/v1/Account/" + s.id + "/Application/" + n.AppID + "/"
	}
	return out
}

// Number is the account's number n (E.164) as the fake holds it now.
func (s *Server) Number(n string) (Number, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.numberLocked(plain(n)); p != nil {
		return *p, true
	}
	return Number{}, false
}

// Application is application id as the fake holds it now.
func (s *Server) Application(id string) (Application, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[id]; a != nil {
		return *a, true
	}
	return Application{}, false
}

func (s *Server) appGet(w http.ResponseWriter, r *http.Request) {
	s.withApp(w, r, func(a *Application) {
		writeJSON(w, http.StatusOK, map[string]any{"app_id": a.AppID, "app_name": a.Name,
			"answer_url": a.AnswerURL, "answer_method": a.AnswerMethod, "hangup_url": a.HangupURL,
			"hangup_method": a.HangupMethod, "resource_uri": "/v1/Account/" + s.id + "/Application/" + a.AppID + "/"})
	})
}

func (s *Server) appUpdate(w http.ResponseWriter, r *http.Request) {
	s.withApp(w, r, func(a *Application) { s.updateApp(w, r.PostForm, a) })
}

// updateApp applies an application update form, checked first; s.mu held.
func (s *Server) updateApp(w http.ResponseWriter, f url.Values, a *Application) {
	for _, field := range []string{"answer_method", "hangup_method"} {
		if v, ok := f[field]; ok && v[0] != http.MethodGet && v[0] != http.MethodPost {
			writeError(w, http.StatusBadRequest, field+" must be GET or POST")
			return
		}
	}
	for _, field := range []string{"answer_url", "hangup_url"} {
		if v, ok := f[field]; ok && v[0] != "" && !absolute(v[0]) {
			writeError(w, http.StatusBadRequest, field+" must be an absolute URL")
			return
		}
	}
	for field, to := range map[string]*string{"answer_url": &a.AnswerURL, "hangup_url": &a.HangupURL, "app_name": &a.Name,
		"answer_method": &a.AnswerMethod, "hangup_method": &a.HangupMethod} {
		if v, ok := f[field]; ok {
			*to = v[0]
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"api_id": newUUID(), "message": "changed"})
}
