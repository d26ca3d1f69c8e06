package api

import (
	"encoding/json"
	"time"

	"github.com/electorhq/elector/gateway"
)

// The JSON views of the gateway's model. Durations are Go duration strings
// (time.Duration.String), times are RFC 3339 in UTC with fractional
// seconds, metadata is always an object ({} when the candidate gave none).

// leaderView is a leader inside another document.
type leaderView struct {
	ID        string          `json:"id"`
	Term      uint64          `json:"term"`
	Metadata  json.RawMessage `json:"metadata"`
	Since     string          `json:"since"`
	ExpiresAt string          `json:"expires_at"`
}

// leaderDoc is the answer of GET /v1/elections/{election}/leader: the
// leader (the longest-standing holder) and, when the election has more
// than one slot, every holder.
type leaderDoc struct {
	Election  string          `json:"election"`
	Term      uint64          `json:"term"`
	ID        string          `json:"id"`
	Metadata  json.RawMessage `json:"metadata"`
	Since     string          `json:"since"`
	ExpiresAt string          `json:"expires_at"`
	Holders   []leaderView    `json:"holders,omitzero"`
}

// candidateView is one candidate in a list of candidates.
type candidateView struct {
	ID            string          `json:"id"`
	State         gateway.State   `json:"state"`
	Position      int             `json:"position"`
	Metadata      json.RawMessage `json:"metadata"`
	TTL           string          `json:"ttl"`
	Priority      int             `json:"priority"`
	JoinedAt      string          `json:"joined_at"`
	ExpiresAt     string          `json:"expires_at"`
	Term          uint64          `json:"term,omitempty"`
	CooldownUntil string          `json:"cooldown_until,omitempty"`
}

// statusDoc is what a candidate learns from campaign, heartbeat and error
// report; Token is set only in the campaign's answer.
type statusDoc struct {
	Election      string          `json:"election"`
	ID            string          `json:"id"`
	State         gateway.State   `json:"state"`
	Position      int             `json:"position"`
	Term          uint64          `json:"term"`
	Metadata      json.RawMessage `json:"metadata"`
	TTL           string          `json:"ttl"`
	Priority      int             `json:"priority"`
	JoinedAt      string          `json:"joined_at"`
	ExpiresAt     string          `json:"expires_at"`
	CooldownUntil string          `json:"cooldown_until,omitempty"`
	Leader        *leaderView     `json:"leader"`
	// Holders are every holder, when the election has more than one slot.
	Holders []leaderView `json:"holders,omitzero"`
	// Transfer is the election's pending leadership transfer.
	Transfer *transferView `json:"transfer,omitempty"`
	Token    string        `json:"token,omitempty"`
	// WebhookSecret signs the candidate's own webhook; set only in the
	// answer of a campaign that gave one.
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

// candidatesDoc is the answer of GET /v1/elections/{election}/candidates.
type candidatesDoc struct {
	Election   string          `json:"election"`
	Term       uint64          `json:"term"`
	Candidates []candidateView `json:"candidates"`
}

// settingsView is an election's settings.
type settingsView struct {
	ErrorCooldown string `json:"error_cooldown"`
	HandoverDelay string `json:"handover_delay"`
	Preempt       bool   `json:"preempt"`
	Holders       int    `json:"holders"`
}

// electionDoc is one election, as GET /v1/elections/{election} answers.
type electionDoc struct {
	Name          string        `json:"name"`
	Settings      settingsView  `json:"settings"`
	Term          uint64        `json:"term"`
	Leader        *leaderView   `json:"leader"`
	Holders       []leaderView  `json:"holders,omitzero"`
	Candidates    int           `json:"candidates"`
	HandoverUntil string        `json:"handover_until,omitempty"`
	Transfer      *transferView `json:"transfer,omitempty"`
}

// electionsDoc is the answer of GET /v1/elections.
type electionsDoc struct {
	Elections []electionDoc `json:"elections"`
}

// snapshotDoc is the data of an SSE reset event: the whole state of one
// election, from which the events that follow are deltas.
type snapshotDoc struct {
	Election      string          `json:"election"`
	Settings      settingsView    `json:"settings"`
	Term          uint64          `json:"term"`
	Leader        *leaderView     `json:"leader"`
	Holders       []leaderView    `json:"holders,omitzero"`
	HandoverUntil string          `json:"handover_until,omitempty"`
	Transfer      *transferView   `json:"transfer,omitempty"`
	Candidates    []candidateView `json:"candidates"`
}

// formatTime is the one time format of the API.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// metadataOf returns metadata as the API shows it: an object, never null.
func metadataOf(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage(`{}`)
	}
	return m
}

func leaderOf(l *gateway.Leader) *leaderView {
	if l == nil {
		return nil
	}
	return &leaderView{ID: l.ID, Term: l.Term, Metadata: metadataOf(l.Metadata), Since: formatTime(l.Since), ExpiresAt: formatTime(l.ExpiresAt)}
}

// holdersOf is the holders member: every holder, or nil (omitted) when the
// election has one slot (the gateway then lists none).
func holdersOf(hs []gateway.Leader) []leaderView {
	if hs == nil {
		return nil
	}
	out := make([]leaderView, len(hs))
	for i := range hs {
		out[i] = *leaderOf(&hs[i])
	}
	return out
}

func leaderDocOf(election string, l gateway.Leader, holders []gateway.Leader) leaderDoc {
	return leaderDoc{Election: election, Term: l.Term, ID: l.ID, Metadata: metadataOf(l.Metadata), Since: formatTime(l.Since), ExpiresAt: formatTime(l.ExpiresAt), Holders: holdersOf(holders)}
}

func statusOf(s gateway.Status, token string) statusDoc {
	c := s.Candidate
	d := statusDoc{
		Election: s.Election, ID: c.ID, State: c.State, Position: s.Position, Term: s.Term,
		Metadata: metadataOf(c.Metadata), TTL: c.TTL.String(), Priority: c.Priority,
		JoinedAt: formatTime(c.JoinedAt), ExpiresAt: formatTime(c.ExpiresAt),
		Leader: leaderOf(s.Leader), Holders: holdersOf(s.Holders), Transfer: transferOf(s.Transfer), Token: token,
	}
	if c.State == gateway.StateError {
		d.CooldownUntil = formatTime(c.CooldownUntil)
	}
	return d
}

// candidatesOf lists an election's candidates in line order with their
// positions, as gateway.StatusOf counts them.
func candidatesOf(e gateway.Election) []candidateView {
	out := make([]candidateView, 0, len(e.Candidates))
	pos := 0
	for _, c := range e.Candidates {
		v := candidateView{
			ID: c.ID, State: c.State, Position: pos, Metadata: metadataOf(c.Metadata), TTL: c.TTL.String(), Priority: c.Priority,
			JoinedAt: formatTime(c.JoinedAt), ExpiresAt: formatTime(c.ExpiresAt),
		}
		switch c.State {
		case gateway.StateLeader:
			v.Term = c.Term
		case gateway.StateError:
			v.Position = -1
			v.CooldownUntil = formatTime(c.CooldownUntil)
		}
		if c.State != gateway.StateError {
			pos++
		}
		out = append(out, v)
	}
	return out
}

func settingsOf(s gateway.Settings) settingsView {
	return settingsView{ErrorCooldown: s.ErrorCooldown.String(), HandoverDelay: s.HandoverDelay.String(), Preempt: s.Preempt, Holders: s.HolderLimit()}
}

func electionOf(e gateway.Election) electionDoc {
	return electionDoc{
		Name: e.Name, Settings: settingsOf(e.Settings), Term: e.Term, Leader: leaderOf(e.Leader), Holders: holdersOf(e.Holders),
		Candidates: len(e.Candidates), HandoverUntil: formatTime(e.HandoverUntil), Transfer: transferOf(e.Transfer),
	}
}

func snapshotOf(e gateway.Election) snapshotDoc {
	return snapshotDoc{
		Election: e.Name, Settings: settingsOf(e.Settings), Term: e.Term, Leader: leaderOf(e.Leader), Holders: holdersOf(e.Holders),
		HandoverUntil: formatTime(e.HandoverUntil), Transfer: transferOf(e.Transfer), Candidates: candidatesOf(e),
	}
}
