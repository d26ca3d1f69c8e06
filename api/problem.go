package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// ProblemTypePrefix starts the type of every problem elector answers with;
// the slug that follows it is stable and documented in openapi.yaml.
const ProblemTypePrefix = "urn:elector:problem:"

// statusClientClosedRequest is the status logged and counted for a request
// whose client went away before its answer (nginx's 499); nobody receives
// it, and it is not a server error.
const statusClientClosedRequest = 499

// problemKind is one entry of the problem catalogue.
type problemKind struct {
	status int
	title  string
}

// The problem catalogue: slug → status and title. openapi.yaml lists the
// same slugs; a test checks that the two agree.
var problemKinds = map[string]problemKind{
	"invalid-request":             {http.StatusBadRequest, "Invalid request"},
	"malformed-json":              {http.StatusBadRequest, "Malformed JSON"},
	"malformed-body":              {http.StatusBadRequest, "Malformed request body"},
	"request-timeout":             {http.StatusRequestTimeout, "Request body too slow"},
	"client-closed-request":       {statusClientClosedRequest, "Client closed request"},
	"candidate-token-missing":     {http.StatusBadRequest, "Candidate token missing"},
	"candidate-token-mismatch":    {http.StatusForbidden, "Candidate token does not match"},
	"session-token-missing":       {http.StatusBadRequest, "Session token missing"},
	"session-token-mismatch":      {http.StatusForbidden, "Session token does not match"},
	"session-not-found":           {http.StatusNotFound, "Session not found"},
	"session-in-election":         {http.StatusConflict, "Session already in the election"},
	"election-not-found":          {http.StatusNotFound, "Election not found"},
	"candidate-not-found":         {http.StatusNotFound, "Candidate not found"},
	"no-leader":                   {http.StatusNotFound, "No leader"},
	"not-found":                   {http.StatusNotFound, "Not found"},
	"method-not-allowed":          {http.StatusMethodNotAllowed, "Method not allowed"},
	"candidate-exists":            {http.StatusConflict, "Candidate already campaigning"},
	"election-not-empty":          {http.StatusConflict, "Election has candidates"},
	"body-too-large":              {http.StatusRequestEntityTooLarge, "Request body too large"},
	"unsupported-media-type":      {http.StatusUnsupportedMediaType, "Unsupported media type"},
	"limit-reached":               {http.StatusTooManyRequests, "Limit reached"},
	"rate-limited":                {http.StatusTooManyRequests, "Rate limited"},
	"unauthenticated":             {http.StatusUnauthorized, "Unauthenticated"},
	"forbidden":                   {http.StatusForbidden, "Forbidden"},
	"webhook-destination-refused": {http.StatusUnprocessableEntity, "Webhook destination refused"},
	"webhook-not-found":           {http.StatusNotFound, "Webhook not found"},
	"delivery-not-found":          {http.StatusNotFound, "Delivery not found"},
	"not-redeliverable":           {http.StatusConflict, "Delivery cannot be redelivered"},
	"transfer-pending":            {http.StatusConflict, "Leadership transfer pending"},
	"not-a-follower":              {http.StatusConflict, "Not a follower"},
	"not-leader":                  {http.StatusConflict, "Not the leader"},
	"no-transfer-pending":         {http.StatusConflict, "No leadership transfer pending"},
	"transfer-blocked":            {http.StatusConflict, "Leadership transfer blocked"},
	"preempt-on":                  {http.StatusConflict, "Transfer started by preempt"},
	"webhooks-unavailable":        {http.StatusNotImplemented, "Webhooks unavailable"},
	"not-supported":               {http.StatusNotImplemented, "Not supported by this backend"},
	"internal":                    {http.StatusInternalServerError, "Internal error"},
	"backend-unavailable":         {http.StatusServiceUnavailable, "Backend unavailable"},
	"election-contended":          {http.StatusServiceUnavailable, "Election contended"},
}

// Problem is an RFC 9457 problem document. Extension members (field,
// handover_until, …) are kept in Ext and written beside the standard ones.
type Problem struct {
	Type     string
	Title    string
	Status   int
	Detail   string
	Instance string
	Ext      map[string]any
}

// MarshalJSON writes the standard members and the extension members as one
// object.
func (p Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, 5+len(p.Ext))
	for k, v := range p.Ext {
		m[k] = v
	}
	m["type"] = p.Type
	m["title"] = p.Title
	m["status"] = p.Status
	m["detail"] = p.Detail
	if p.Instance != "" {
		m["instance"] = p.Instance
	}
	return json.Marshal(m)
}

// apiError is an error raised by this package itself (as opposed to the
// gateway): it already knows its slug and detail.
type apiError struct {
	slug   string
	detail string
	ext    map[string]any
}

func (e *apiError) Error() string { return e.slug + ": " + e.detail }

// errorf returns an *apiError of kind slug.
func errorf(slug, format string, args ...any) *apiError {
	return &apiError{slug: slug, detail: fmt.Sprintf(format, args...)}
}

// invalidField returns a validation error of the gateway's kind, so that
// the API's own input checks and the gateway's read the same to a client.
func invalidField(field, format string, args ...any) error {
	return &gateway.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// newProblem builds the problem of kind slug for request r.
func newProblem(r *http.Request, slug, detail string) Problem {
	k, ok := problemKinds[slug]
	if !ok {
		slug, k = "internal", problemKinds["internal"]
	}
	return Problem{Type: ProblemTypePrefix + slug, Title: k.title, Status: k.status, Detail: detail, Instance: r.URL.Path}
}

// problemFor maps err, returned while serving r, to its problem. It is the
// one place where errors become HTTP statuses. Details are written here
// from the request and from the fields of typed errors meant for clients
// (ValidationError, RefusedError), never from an error's text, so that
// backend internals do not leak to clients.
func problemFor(r *http.Request, err error) Problem {
	election, id := chi.URLParam(r, "election"), chi.URLParam(r, "id")
	var ae *apiError
	var ve *gateway.ValidationError
	var mbe *http.MaxBytesError
	var le *gateway.LimitError
	var tp *gateway.TransferPendingError
	var ue *gateway.UnsupportedError
	var tb *gateway.TransferBlockedError
	var cr *gateway.CandidacyRevokedError
	switch {
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		return newProblem(r, "client-closed-request", "the client went away before the answer")
	case errors.As(err, &ae):
		p := newProblem(r, ae.slug, ae.detail)
		p.Ext = ae.ext
		return p
	case errors.As(err, &mbe):
		return newProblem(r, "body-too-large", fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit))
	case errors.As(err, &ve):
		p := newProblem(r, "invalid-request", fmt.Sprintf("%s %s", ve.Field, ve.Reason))
		p.Ext = map[string]any{"field": ve.Field}
		return p
	case errors.As(err, &tp):
		return transferPendingProblem(r, election, id, tp.Transfer)
	case errors.As(err, &ue):
		p := newProblem(r, "not-supported", fmt.Sprintf("the %s backend of this gateway does not support %s; use a backend that does (%s)", ue.Backend, ue.Ability, ue.Supported()))
		p.Ext = map[string]any{"backend": ue.Backend}
		return p
	case errors.Is(err, gateway.ErrNotFollower):
		return newProblem(r, "not-a-follower", fmt.Sprintf(
			"candidate %q is not a follower in election %q (it leads, is in error, or is not campaigning); name a follower from GET /v1/elections/%s/candidates", id, election, election))
	case errors.Is(err, gateway.ErrNotLeader):
		if from := chi.URLParam(r, "from"); from != "" && strings.HasSuffix(r.URL.Path, "/transfer") {
			return newProblem(r, "not-leader", fmt.Sprintf("candidate %q does not hold election %q (or the candidate token is not its token); name a holder from GET /v1/elections/%s/leader", clip(from), election, election))
		}
		if strings.HasSuffix(r.URL.Path, "/transfer") {
			what := "ask for"
			if r.Method == http.MethodDelete {
				what = "cancel"
			}
			return newProblem(r, "not-leader", fmt.Sprintf("the candidate token is not the token of the leader of election %q (with several holders, of the holder asked to hand over); only that holder (or an API token with scope admin, without a candidate token) may %s a transfer", election, what))
		}
		return newProblem(r, "not-leader", fmt.Sprintf("candidate %q does not lead election %q", id, election))
	case errors.As(err, &tb):
		return newProblem(r, "transfer-blocked", fmt.Sprintf("the leadership of election %q cannot be transferred to %q: %s", election, tb.To, tb.Reason))
	case errors.Is(err, gateway.ErrPreempting):
		return newProblem(r, "preempt-on", fmt.Sprintf(
			"the transfer pending in election %q was started by its preempt setting, which would start it again at once; turn preempt off first (PATCH /v1/elections/%s with {\"preempt\": false}), then cancel it", election, election))
	case errors.Is(err, gateway.ErrNoTransfer) && r.Method == http.MethodDelete:
		return newProblem(r, "no-transfer-pending", fmt.Sprintf(
			"election %q has no leadership transfer to cancel: none was asked for, it completed or was cancelled, or the leadership it asked to hand over has already ended (its target then leads next)", election))
	case errors.Is(err, gateway.ErrNoTransfer):
		return newProblem(r, "no-transfer-pending", fmt.Sprintf("election %q has no leadership transfer pending; there is nothing to hand over", election))
	case errors.Is(err, webhooks.ErrDestinationRefused):
		return newProblem(r, "webhook-destination-refused", refusedDetail(err))
	case errors.Is(err, webhooks.ErrEndpointNotFound):
		if sub := chi.URLParam(r, "sub"); sub != "" {
			return newProblem(r, "webhook-not-found", fmt.Sprintf("election %q has no subscription %q", election, clip(sub)))
		}
		return newProblem(r, "webhook-not-found", fmt.Sprintf("candidate %q in election %q campaigned without a webhook", id, election))
	case errors.Is(err, webhooks.ErrDeliveryNotFound):
		return newProblem(r, "delivery-not-found", fmt.Sprintf("there is no delivery %q in this log (old deliveries are pruned)", clip(chi.URLParam(r, "delivery"))))
	case errors.Is(err, webhooks.ErrNotRedeliverable):
		return newProblem(r, "not-redeliverable", "this record is a gap in the log (events the backend no longer held), not a delivery; there is nothing to send again")
	case errors.Is(err, gateway.ErrInvalid):
		return newProblem(r, "invalid-request", "the request is not valid")
	case errors.Is(err, gateway.ErrSessionNotFound):
		return newProblem(r, "session-not-found", "the session is unknown, closed, or expired (its heartbeats stopped for its TTL), and its candidacies with it; open another with POST /v1/sessions and campaign again")
	case errors.Is(err, gateway.ErrSessionInElection):
		return newProblem(r, "session-in-election", fmt.Sprintf(
			"the session already has a candidacy in election %q: a session campaigns once per election; resign that candidacy first, or campaign in another session", election))
	case errors.Is(err, gateway.ErrTokenMismatch):
		return newProblem(r, "candidate-token-mismatch", fmt.Sprintf(
			"the Elector-Candidate-Token header is not the token of candidate %q in election %q; use the token its campaign returned", id, election))
	case errors.As(err, &cr):
		// Still candidate-not-found (campaign again), with what the
		// backend did, so that the candidate knows it was not late.
		p := newProblem(r, "candidate-not-found", fmt.Sprintf(
			"candidate %q is not campaigning in election %q: the backend ended its candidacy at %s, before the TTL of its last acknowledged heartbeat ran out at %s (see revoked); campaign again with POST /v1/elections/%s/candidates",
			id, election, formatTime(cr.At), formatTime(cr.ExpiresAt), election))
		p.Ext = map[string]any{"revoked": map[string]string{"at": formatTime(cr.At), "expires_at": formatTime(cr.ExpiresAt)}}
		return p
	case errors.Is(err, gateway.ErrCandidateNotFound):
		return newProblem(r, "candidate-not-found", fmt.Sprintf(
			"candidate %q is not campaigning in election %q (it resigned or its TTL ran out); campaign again with POST /v1/elections/%s/candidates", id, election, election))
	case errors.Is(err, gateway.ErrElectionNotFound):
		return newProblem(r, "election-not-found", fmt.Sprintf(
			"election %q does not exist; it is created by the first campaign or by PATCH /v1/elections/%s", election, election))
	case errors.Is(err, gateway.ErrCandidateExists):
		return newProblem(r, "candidate-exists", fmt.Sprintf(
			"candidate %q is already campaigning in election %q; resign it with its token (DELETE /v1/elections/%s/candidates/%s) or wait for its TTL to run out", id, election, election, id))
	case errors.Is(err, gateway.ErrElectionNotEmpty):
		return newProblem(r, "election-not-empty", fmt.Sprintf(
			"election %q still has candidates; it can be deleted once every candidate has resigned or expired", election))
	case errors.Is(err, gateway.ErrNotSupported):
		return newProblem(r, "not-supported", fmt.Sprintf("this gateway's backend cannot %s", strings.ToLower(r.Method)+" "+clip(r.URL.Path)))
	case errors.Is(err, gateway.ErrNoLeader):
		return newProblem(r, "no-leader", fmt.Sprintf("election %q has no leader at the moment", election))
	case errors.As(err, &le):
		p := newProblem(r, "limit-reached", fmt.Sprintf("the limit %s (%d) is reached; resign or remove some before adding more", le.Limit, le.Max))
		p.Ext = map[string]any{"limit": le.Limit}
		return p
	case errors.Is(err, gateway.ErrLimit):
		return newProblem(r, "limit-reached", "a limit of the gateway was reached; try again later or with fewer resources")
	case errors.Is(r.Context().Err(), context.DeadlineExceeded):
		return newProblem(r, "backend-unavailable", fmt.Sprintf("the coordination backend did not answer within %s; retry shortly", ReadTimeout))
	case errors.Is(err, gateway.ErrContended):
		return newProblem(r, "election-contended", fmt.Sprintf(
			"other writes to election %q kept getting there first, %d times in a row, so this request gave up before its write was made; send it again shortly", election, gateway.Conflicts.Attempts))
	case errors.Is(err, gateway.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return newProblem(r, "backend-unavailable", "the coordination backend cannot serve the request at the moment; retry shortly")
	default:
		return newProblem(r, "internal", "an unexpected error occurred; the gateway's log has the details under this request's id")
	}
}

// writeError answers r with the problem for err. Unexpected errors are
// logged (their text comes from the gateway and backends, which never put
// tokens in errors).
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(r, err)
	var ae *apiError
	if p.Status >= 500 && !errors.As(err, &ae) && !errors.Is(r.Context().Err(), context.Canceled) {
		a.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("path", r.URL.Path), slog.String("request_id", requestID(w)), slog.String("error", err.Error()))
	}
	if p.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeProblem(w, p)
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, p Problem) {
	b, err := json.Marshal(p)
	if err != nil { // cannot happen: every member is a plain value
		b = []byte(`{"type":"urn:elector:problem:internal","title":"Internal error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Del("Location")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// transferPendingProblem is the 409 transfer-pending problem with the
// pending transfer as the member transfer. A leader whose heartbeat gets
// it must hand over (POST …/handover) or stop acting as leader: its
// heartbeats no longer extend its life.
func transferPendingProblem(r *http.Request, election, id string, t gateway.Transfer) Problem {
	detail := fmt.Sprintf("a transfer of the leadership of election %q to %q is pending (%s)", election, t.To, t.Reason)
	if strings.HasSuffix(r.URL.Path, "/heartbeat") {
		detail = fmt.Sprintf("%s: candidate %q must stop acting as leader and hand over with POST /v1/elections/%s/candidates/%s/handover; its heartbeats no longer extend its life", detail, id, election, id)
	}
	p := newProblem(r, "transfer-pending", detail)
	p.Ext = map[string]any{"transfer": transferOf(&t)}
	return p
}

// noLeaderError is ErrNoLeader with the handover deadline, if one is
// running, as an extension member.
func noLeaderError(election string, handoverUntil time.Time) error {
	e := errorf("no-leader", "election %q has no leader at the moment", election)
	if !handoverUntil.IsZero() {
		e.detail += "; the next leader is promoted when the handover ends at handover_until (a handover delay, or the last leader's promise)"
		e.ext = map[string]any{"handover_until": formatTime(handoverUntil)}
	}
	return e
}

// refusedDetail says why a webhook URL is refused and what to do: use a
// public http(s) URL or, for a destination on a non-public network (which
// local development may allow), the setting, named once with its flag and
// environment variable. The reason is the guard's RefusedError.Reason,
// written for clients.
func refusedDetail(err error) string {
	var re *webhooks.RefusedError
	if !errors.As(err, &re) {
		return "the webhook URL is refused; use a public http(s) URL"
	}
	if re.Scheme {
		return "the webhook URL is refused: " + re.Reason + "; use an http(s) URL"
	}
	return "the webhook URL is refused: " + re.Reason + "; use a public http(s) URL, or for local development set " +
		"webhooks.allow_private_networks (flag --webhooks-allow-private-networks, environment ELECTOR_WEBHOOKS_ALLOW_PRIVATE_NETWORKS)"
}
