package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// transfer: POST /v1/elections/{election}/transfer, {"to": "node-b"} and,
// with several holders, "from" naming the holder to hand over. An
// operator (admin scope) or the leader itself (its candidate token in
// Elector-Candidate-Token, campaign scope) asks the leader to hand over to
// follower to. The answer is 202 with the election and its pending
// transfer: the target leads once the leader hands over or expires.
func (a *api) transfer(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	if err := gateway.ValidateElectionName(election); err != nil {
		a.writeError(w, r, err)
		return
	}
	obj, err := a.readObject(w, r, []string{"to", "from"}, false, jsonTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if obj.isNull("to") {
		a.writeError(w, r, invalidField("to", "is required: name the follower that should lead"))
		return
	}
	to, err := obj.string("to")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	from, err := obj.string("from")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// Route the target and the holder into the problem details
	// (not-a-follower, not-leader).
	chi.RouteContext(r.Context()).URLParams.Add("id", to)
	if from != "" {
		chi.RouteContext(r.Context()).URLParams.Add("from", from)
	}
	e, err := a.gw.Transfer(r.Context(), election, from, to, r.Header.Get(TokenHeader))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusAccepted, electionOf(e))
}

// cancelTransfer: DELETE /v1/elections/{election}/transfer. Whoever may
// ask for a transfer may cancel it: an operator (admin scope), or the
// leader with its own candidate token in Elector-Candidate-Token
// (campaign scope). The answer is 200 with the election, its leader
// unchanged and no transfer pending.
func (a *api) cancelTransfer(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	e, err := a.gw.CancelTransfer(r.Context(), election, r.Header.Get(TokenHeader))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, electionOf(e))
}

// handover: POST /v1/elections/{election}/candidates/{id}/handover. The
// leader, once it has stopped acting as leader, ends its leadership in
// favour of the pending transfer's target and stays in line.
func (a *api) handover(w http.ResponseWriter, r *http.Request) {
	election, id, token, err := candidateParams(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := a.gw.Handover(r.Context(), election, id, token)
	if err != nil {
		a.writeError(w, r, candidateErr(err))
		return
	}
	writeJSON(w, http.StatusOK, statusOf(st, ""))
}

// transferView is a pending leadership transfer: to the follower To, of
// the holdership of From.
type transferView struct {
	To          string `json:"to"`
	From        string `json:"from,omitempty"`
	Reason      string `json:"reason"`
	RequestedAt string `json:"requested_at"`
}

func transferOf(t *gateway.Transfer) *transferView {
	if t == nil {
		return nil
	}
	return &transferView{To: t.To, From: t.From, Reason: t.Reason, RequestedAt: formatTime(t.At)}
}
