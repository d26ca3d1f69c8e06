package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// patchTypes are the media types PATCH /v1/elections/{election} accepts; the
// body is a JSON merge patch (RFC 7396) of the election's settings.
var patchTypes = []string{"application/merge-patch+json", "application/json"}

// listElections: GET /v1/elections, sorted by name.
func (a *api) listElections(w http.ResponseWriter, r *http.Request) {
	ctx, err := readContext(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	es, _, err := a.gw.Elections(ctx)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	doc := electionsDoc{Elections: make([]electionDoc, 0, len(es))}
	for _, e := range es {
		doc.Elections = append(doc.Elections, electionOf(e))
	}
	writeJSON(w, http.StatusOK, doc)
}

// getElection: GET /v1/elections/{election}.
func (a *api) getElection(w http.ResponseWriter, r *http.Request) {
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
	writeJSON(w, http.StatusOK, electionOf(e))
}

// patchElection: PATCH /v1/elections/{election}, a JSON merge patch of
// {"error_cooldown", "handover_delay", "preempt", "holders"}. A member set to null goes back to
// the gateway's default. The election is created if it does not exist, so
// that operators can configure it before the first campaign.
func (a *api) patchElection(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	if err := gateway.ValidateElectionName(election); err != nil {
		a.writeError(w, r, err)
		return
	}
	obj, err := a.readObject(w, r, []string{"error_cooldown", "handover_delay", "preempt", "holders"}, false, patchTypes...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defaults := gateway.DefaultSettings()
	if d := a.gw.Config().Defaults; d != nil {
		defaults = *d
	}
	var p gateway.SettingsPatch
	if p.ErrorCooldown, err = patchDuration(obj, "error_cooldown", defaults.ErrorCooldown); err != nil {
		a.writeError(w, r, err)
		return
	}
	if p.HandoverDelay, err = patchDuration(obj, "handover_delay", defaults.HandoverDelay); err != nil {
		a.writeError(w, r, err)
		return
	}
	if _, present := obj["preempt"]; present {
		b, given, err := obj.boolean("preempt")
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if !given {
			b = defaults.Preempt
		}
		p.Preempt = &b
	}
	if _, present := obj["holders"]; present {
		n := defaults.HolderLimit()
		if !obj.isNull("holders") {
			if n, err = obj.integer("holders"); err != nil {
				a.writeError(w, r, err)
				return
			}
		}
		p.Holders = &n
	}
	e, err := a.gw.Configure(r.Context(), election, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, electionOf(e))
}

// patchDuration reads one member of a merge patch: absent leaves the
// setting alone (nil), null resets it to def, a string sets it.
func patchDuration(obj jsonObject, name string, def time.Duration) (*time.Duration, error) {
	if _, present := obj[name]; !present {
		return nil, nil
	}
	d, given, err := obj.duration(name)
	if err != nil {
		return nil, err
	}
	if !given {
		d = def
	}
	return &d, nil
}

// getLeader: GET /v1/elections/{election}/leader: the leader (with several
// holders, the longest-standing, and every holder in holders). With nobody
// leading it answers 404 no-leader, with handover_until while a handover
// delay runs.
func (a *api) getLeader(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	ctx, err := readContext(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	l, e, err := a.gw.Leader(ctx, election)
	switch {
	case errors.Is(err, gateway.ErrNoLeader):
		a.writeError(w, r, noLeaderError(election, e.HandoverUntil))
		return
	case err != nil:
		a.writeError(w, r, err)
		return
	}
	writeDoc(w, http.StatusOK, leaderDocOf(e.Name, l, e.Holders))
}

// deleteElection: DELETE /v1/elections/{election}, an election nobody
// campaigns in any more.
func (a *api) deleteElection(w http.ResponseWriter, r *http.Request) {
	if err := a.gw.DeleteElection(r.Context(), chi.URLParam(r, "election")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
