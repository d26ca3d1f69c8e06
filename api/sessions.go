package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// SessionTokenHeader carries the token that opening a session returned; the
// session's own endpoints and a campaign in the session require it. A
// candidacy of the session shows the same token in TokenHeader.
const SessionTokenHeader = "Elector-Session-Token"

// sessionDoc is a session as the API shows it.
type sessionDoc struct {
	ID         string             `json:"id"`
	TTL        string             `json:"ttl"`
	ExpiresAt  string             `json:"expires_at"`
	Candidates []sessionCandidate `json:"candidates"`
	Token      string             `json:"token,omitempty"`
}

type sessionCandidate struct {
	Election  string        `json:"election"`
	ID        string        `json:"id"`
	State     gateway.State `json:"state"`
	Term      uint64        `json:"term"`
	ExpiresAt string        `json:"expires_at"`
}

func sessionOf(s gateway.Session, token string) sessionDoc {
	d := sessionDoc{ID: s.ID, TTL: s.TTL.String(), ExpiresAt: formatTime(s.ExpiresAt), Candidates: make([]sessionCandidate, len(s.Candidates)), Token: token}
	for i, c := range s.Candidates {
		d.Candidates[i] = sessionCandidate{Election: c.Election, ID: c.ID, State: c.State, Term: c.Term, ExpiresAt: formatTime(c.ExpiresAt)}
	}
	return d
}

// sessionErr names the session in a token mismatch, which would otherwise
// read as a candidate's.
func sessionErr(err error) error {
	if errors.Is(err, gateway.ErrTokenMismatch) {
		return errorf("session-token-mismatch", "the %s header is not the token of this session; use the token that opening it returned", SessionTokenHeader)
	}
	return err
}

// sessionParams validates the path of a session's endpoints and reads its
// token. Errors: invalid-request, session-token-missing.
func sessionParams(r *http.Request) (id, token string, err error) {
	id = chi.URLParam(r, "session")
	if err := gateway.ValidateSessionID(id); err != nil {
		return "", "", err
	}
	token = r.Header.Get(SessionTokenHeader)
	if token == "" {
		return "", "", errorf("session-token-missing", "send the token that opening session %q returned in the %s header", id, SessionTokenHeader)
	}
	return id, token, nil
}

// openSession: POST /v1/sessions.
func (a *api) openSession(w http.ResponseWriter, r *http.Request) {
	obj, err := a.readObject(w, r, []string{"ttl"}, true, jsonTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ttl, given, err := obj.duration("ttl")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if given && ttl <= 0 {
		cfg := a.gw.Config()
		a.writeError(w, r, invalidField("ttl", "must be between %s and %s, got %s", cfg.MinTTL, cfg.MaxTTL, ttl))
		return
	}
	s, token, err := a.gw.OpenSession(r.Context(), ttl)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+s.ID)
	writeMarshaled(w, http.StatusCreated, sessionOf(s, token))
}

// keepSession: PUT /v1/sessions/{session}/heartbeat.
func (a *api) keepSession(w http.ResponseWriter, r *http.Request) {
	id, token, err := sessionParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	s, err := a.gw.KeepSession(r.Context(), id, token)
	if err != nil {
		a.writeError(w, r, sessionErr(err))
		return
	}
	writeMarshaled(w, http.StatusOK, sessionOf(s, ""))
}

// closeSession: DELETE /v1/sessions/{session}.
func (a *api) closeSession(w http.ResponseWriter, r *http.Request) {
	id, token, err := sessionParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.gw.CloseSession(r.Context(), id, token); err != nil {
		a.writeError(w, r, sessionErr(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
