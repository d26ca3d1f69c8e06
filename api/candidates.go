package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// TokenHeader carries the candidate token that campaign returns; heartbeat,
// resign and error report require it. It is a header of its own so that it
// never collides with API authentication (Authorization).
const TokenHeader = "Elector-Candidate-Token"

var jsonTypes = []string{"application/json"}

// campaign: POST /v1/elections/{election}/candidates.
func (a *api) campaign(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	if err := gateway.ValidateElectionName(election); err != nil {
		a.writeError(w, r, err)
		return
	}
	obj, err := a.readObject(w, r, []string{"id", "ttl", "priority", "metadata", "webhook", "session"}, false, jsonTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	req, err := a.campaignRequest(obj)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	hook, err := a.prepareWebhook(r, election, obj)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// Route the candidate id into the problem details (candidate-exists).
	chi.RouteContext(r.Context()).URLParams.Add("id", req.ID)
	if req.Session != "" {
		if req.SessionToken = r.Header.Get(SessionTokenHeader); req.SessionToken == "" {
			a.writeError(w, r, errorf("session-token-missing", "a campaign in session %q needs the token that opening it returned, in the %s header", req.Session, SessionTokenHeader))
			return
		}
	}
	st, token, err := a.gw.Campaign(r.Context(), election, req)
	if err != nil {
		if req.Session != "" {
			err = sessionErr(err)
		}
		a.writeError(w, r, err)
		return
	}
	doc := statusOf(st, token)
	if hook != nil {
		if doc.WebhookSecret, err = hook.Register(r.Context(), req.ID, token); err != nil {
			// Without its endpoint the candidate would lead with no begin
			// handler: take the candidacy back.
			_ = a.gw.Resign(context.WithoutCancel(r.Context()), election, req.ID, token)
			a.writeError(w, r, err)
			return
		}
	}
	w.Header().Set("Location", "/v1/elections/"+election+"/candidates/"+url.PathEscape(req.ID))
	writeDoc(w, http.StatusCreated, doc)
}

// prepareWebhook reads and checks the campaign's optional webhook member,
// {"url": "…", "begin_timeout": "10s"}, before the campaign. Errors:
// invalid-request, webhook-destination-refused, webhooks-unavailable.
func (a *api) prepareWebhook(r *http.Request, election string, obj jsonObject) (*webhooks.PendingCandidate, error) {
	hook, err := obj.object("webhook", []string{"url", "begin_timeout"})
	if err != nil || hook == nil {
		return nil, err
	}
	if a.cfg.Webhooks == nil {
		return nil, errNoWebhooks()
	}
	var cw webhooks.CandidateWebhook
	if cw.URL, err = hook.string("url"); err != nil {
		return nil, invalidField("webhook.url", "must be a JSON string")
	}
	bt, given, err := hook.duration("begin_timeout")
	if err != nil {
		return nil, invalidField("webhook.begin_timeout", `must be a duration string such as "10s"`)
	}
	if given && bt <= 0 {
		return nil, invalidField("webhook.begin_timeout", "must be between %s and %s, got %s", webhooks.MinBeginTimeout, webhooks.MaxBeginTimeout, bt)
	}
	cw.BeginTimeout = bt
	return a.cfg.Webhooks.PrepareCandidate(r.Context(), election, cw)
}

// campaignRequest reads the members of a campaign body. The gateway
// validates the values; here only their JSON types, and an explicit ttl of
// zero, which the gateway would read as "the default".
func (a *api) campaignRequest(obj jsonObject) (gateway.CampaignRequest, error) {
	var req gateway.CampaignRequest
	var err error
	if obj.isNull("id") {
		return req, invalidField("id", "is required: name the candidate, for example with its host name")
	}
	if req.ID, err = obj.string("id"); err != nil {
		return req, err
	}
	ttl, given, err := obj.duration("ttl")
	if err != nil {
		return req, err
	}
	if given && ttl <= 0 {
		cfg := a.gw.Config()
		return req, invalidField("ttl", "must be between %s and %s, got %s", cfg.MinTTL, cfg.MaxTTL, ttl)
	}
	req.TTL = ttl
	if !obj.isNull("session") {
		if req.Session, err = obj.string("session"); err != nil {
			return req, err
		}
		if err := gateway.ValidateSessionID(req.Session); err != nil {
			return req, err
		}
		if given {
			return req, invalidField("ttl", "a candidacy in a session has the session's TTL: leave ttl out")
		}
	}
	if req.Priority, err = obj.integer("priority"); err != nil {
		return req, err
	}
	if !obj.isNull("metadata") {
		if !utf8.Valid(obj["metadata"]) {
			return req, invalidField("metadata", "must be valid UTF-8")
		}
		req.Metadata = obj["metadata"]
	}
	return req, nil
}

// candidateParams validates the path of a candidate's own endpoints and
// reads its token. Errors: invalid-request, candidate-token-missing.
func candidateParams(r *http.Request) (election, id, token string, err error) {
	election, id = chi.URLParam(r, "election"), chi.URLParam(r, "id")
	if err := gateway.ValidateElectionName(election); err != nil {
		return "", "", "", err
	}
	if err := gateway.ValidateCandidateID(id); err != nil {
		return "", "", "", err
	}
	token = r.Header.Get(TokenHeader)
	if token == "" {
		return "", "", "", errorf("candidate-token-missing",
			"send the token that the campaign of candidate %q returned in the %s header", id, TokenHeader)
	}
	return election, id, token, nil
}

// candidateErr reads "no such election" as "no such candidate" on a
// candidate's own endpoints: either way the candidate must campaign again.
func candidateErr(err error) error {
	if errors.Is(err, gateway.ErrElectionNotFound) {
		return fmt.Errorf("%w (%w)", gateway.ErrCandidateNotFound, err)
	}
	return err
}

// heartbeat: PUT /v1/elections/{election}/candidates/{id}/heartbeat.
func (a *api) heartbeat(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := a.gw.Heartbeat(r.Context(), election, id, token)
	if err != nil {
		a.writeError(w, r, candidateErr(err))
		return
	}
	writeDoc(w, http.StatusOK, statusOf(st, ""))
}

// resign: DELETE /v1/elections/{election}/candidates/{id}.
func (a *api) resign(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.gw.Resign(r.Context(), election, id, token); err != nil {
		a.writeError(w, r, candidateErr(err))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// reportError: POST /v1/elections/{election}/candidates/{id}/error, with an
// optional body {"reason": "…"}.
func (a *api) reportError(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	obj, err := a.readObject(w, r, []string{"reason"}, true, jsonTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	reason, err := obj.string("reason")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := a.gw.ReportError(r.Context(), election, id, token, reason)
	if err != nil {
		a.writeError(w, r, candidateErr(err))
		return
	}
	writeDoc(w, http.StatusOK, statusOf(st, ""))
}

// getCandidate: GET /v1/elections/{election}/candidates/{id}, the public
// status of one candidate (no token needed, none returned).
func (a *api) getCandidate(w http.ResponseWriter, r *http.Request) {
	election, id := chi.URLParam(r, "election"), chi.URLParam(r, "id")
	if err := gateway.ValidateCandidateID(id); err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx, err := readContext(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.gw.Election(ctx, election)
	if err != nil {
		a.writeError(w, r, candidateErr(err))
		return
	}
	st, ok := gateway.StatusOf(e, id)
	if !ok {
		a.writeError(w, r, gateway.ErrCandidateNotFound)
		return
	}
	writeDoc(w, http.StatusOK, statusOf(st, ""))
}

// listCandidates: GET /v1/elections/{election}/candidates, in line order.
func (a *api) listCandidates(w http.ResponseWriter, r *http.Request) {
	ctx, err := readContext(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.gw.Election(ctx, chi.URLParam(r, "election"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, candidatesDoc{Election: e.Name, Term: e.Term, Candidates: candidatesOf(e)})
}
