package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// Bounds of the limit query parameter of delivery logs.
const (
	defaultDeliveryLimit = 100
	maxDeliveryLimit     = 500
)

// errNoWebhooks answers webhook requests on an API built without a
// webhook service (Config.Webhooks), as a program embedding it may be.
func errNoWebhooks() error {
	return errorf("webhooks-unavailable", "this gateway does not deliver webhooks: it runs without webhook delivery")
}

// hooks returns the webhook service or writes the problem saying there is none.
func (a *api) hooks(w http.ResponseWriter, r *http.Request) (*webhooks.Service, bool) {
	if a.cfg.Webhooks == nil {
		a.writeError(w, r, errNoWebhooks())
		return nil, false
	}
	return a.cfg.Webhooks, true
}

// createSubscription: POST /v1/elections/{election}/subscriptions.
func (a *api) createSubscription(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	if err := gateway.ValidateElectionName(election); err != nil {
		a.writeError(w, r, err)
		return
	}
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	obj, err := a.readObject(w, r, []string{"url", "types", "secret"}, false, jsonTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var req webhooks.SubscriptionRequest
	if req.URL, err = obj.string("url"); err != nil {
		a.writeError(w, r, err)
		return
	}
	if req.Secret, err = obj.string("secret"); err != nil {
		a.writeError(w, r, err)
		return
	}
	types, err := obj.strings("types")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	for _, t := range types {
		req.Types = append(req.Types, gateway.EventType(t))
	}
	ep, secret, err := svc.CreateSubscription(r.Context(), election, req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/elections/"+election+"/subscriptions/"+ep.ID)
	writeJSON(w, http.StatusCreated, subscriptionOf(ep, secret))
}

// listSubscriptions: GET /v1/elections/{election}/subscriptions.
func (a *api) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	eps, err := svc.Subscriptions(r.Context(), chi.URLParam(r, "election"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	doc := subscriptionsDoc{Subscriptions: make([]subscriptionDoc, 0, len(eps))}
	for _, ep := range eps {
		doc.Subscriptions = append(doc.Subscriptions, subscriptionOf(ep, ""))
	}
	writeJSON(w, http.StatusOK, doc)
}

// getSubscription: GET /v1/elections/{election}/subscriptions/{sub}.
func (a *api) getSubscription(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	ep, err := svc.Subscription(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, subscriptionOf(ep, ""))
}

// deleteSubscription: DELETE /v1/elections/{election}/subscriptions/{sub}.
func (a *api) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	if err := svc.DeleteSubscription(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// rotateSecret: POST /v1/elections/{election}/subscriptions/{sub}/rotate-secret.
func (a *api) rotateSecret(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	ep, secret, err := svc.RotateSecret(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, subscriptionOf(ep, secret))
}

// deliveryLimit reads the limit query parameter.
func deliveryLimit(r *http.Request) (int, error) {
	q, err := query(r)
	if err != nil {
		return 0, err
	}
	v := q.Get("limit")
	if v == "" {
		return defaultDeliveryLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxDeliveryLimit {
		return 0, invalidField("limit", "must be a whole number from 1 to %d", maxDeliveryLimit)
	}
	return n, nil
}

// listDeliveries: GET /v1/elections/{election}/subscriptions/{sub}/deliveries.
func (a *api) listDeliveries(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	limit, err := deliveryLimit(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ds, err := svc.Deliveries(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub"), limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deliveriesOf(ds))
}

// getDelivery: GET /v1/elections/{election}/subscriptions/{sub}/deliveries/{delivery}.
func (a *api) getDelivery(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	d, err := svc.Delivery(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub"), chi.URLParam(r, "delivery"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deliveryOf(d))
}

// redeliver: POST /v1/elections/{election}/subscriptions/{sub}/deliveries/{delivery}/redeliver.
func (a *api) redeliver(w http.ResponseWriter, r *http.Request) {
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	d, err := svc.Redeliver(r.Context(), chi.URLParam(r, "election"), chi.URLParam(r, "sub"), chi.URLParam(r, "delivery"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deliveryOf(d))
}

// candidateHookErr answers "the candidate has no webhook" exactly as "this
// is not the candidate's token": a webhook's endpoint is the only place the
// token can be checked without a write, so telling the two apart would
// tell anybody holding some token whether a candidate has a webhook.
func candidateHookErr(err error, election, id string, tokenChecked bool) error {
	if tokenChecked && errors.Is(err, webhooks.ErrEndpointNotFound) {
		return err // the token is the candidate's: it may learn it has no webhook
	}
	if errors.Is(err, webhooks.ErrEndpointNotFound) || errors.Is(err, gateway.ErrTokenMismatch) {
		return errorf("candidate-token-mismatch",
			"the %s header is not the token of a webhook of candidate %q in election %q: it is not the token its campaign returned, or the candidate campaigned without a webhook (and so has no delivery log)",
			TokenHeader, id, election)
	}
	return err
}

// checkCandidateToken checks the candidate token before anything about the
// candidate's webhook is looked at, so that a wrong token learns nothing
// (not even whether the candidate has a webhook). checked is false when
// the candidate is gone (its delivery log may outlive it): the webhook
// service then checks the token against the endpoint, and a wrong token
// and no webhook read the same.
func (a *api) checkCandidateToken(r *http.Request, election, id, token string) (checked bool, err error) {
	err = a.gw.CheckToken(r.Context(), election, id, token)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, gateway.ErrCandidateNotFound):
		return false, nil
	case errors.Is(err, gateway.ErrTokenMismatch):
		return false, candidateHookErr(err, election, id, false)
	}
	return false, err
}

// candidateDeliveries: GET /v1/elections/{election}/candidates/{id}/deliveries,
// the log of the candidate's own webhook, with its token.
func (a *api) candidateDeliveries(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	limit, err := deliveryLimit(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	checked, err := a.checkCandidateToken(r, election, id, token)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ds, err := svc.CandidateDeliveries(r.Context(), election, id, token, limit)
	if err != nil {
		a.writeError(w, r, candidateHookErr(err, election, id, checked))
		return
	}
	writeJSON(w, http.StatusOK, deliveriesOf(ds))
}

// redeliverCandidate: POST /v1/elections/{election}/candidates/{id}/deliveries/{delivery}/redeliver.
func (a *api) redeliverCandidate(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	svc, ok := a.hooks(w, r)
	if !ok {
		return
	}
	checked, err := a.checkCandidateToken(r, election, id, token)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	d, err := svc.RedeliverCandidate(r.Context(), election, id, token, chi.URLParam(r, "delivery"))
	if err != nil {
		a.writeError(w, r, candidateHookErr(err, election, id, checked))
		return
	}
	writeJSON(w, http.StatusOK, deliveryOf(d))
}
