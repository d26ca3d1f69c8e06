package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Store remembers what the receiver has acted on: the webhook-ids it has
// seen and the highest term per election. Implementations must be safe
// for concurrent use.
type Store interface {
	// Seen reports whether id was recorded.
	Seen(ctx context.Context, id string) (bool, error)
	// Highest is the highest term recorded for election (0: none).
	Highest(ctx context.Context, election string) (uint64, error)
	// Record records id and, if it is higher, term for election.
	Record(ctx context.Context, id, election string, term uint64) error
}

// MemoryStore is a Store in the function instance's memory.
type MemoryStore struct {
	mu      sync.Mutex
	ids     map[string]bool
	highest map[string]uint64
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{ids: map[string]bool{}, highest: map[string]uint64{}}
}

// Seen implements Store.
func (m *MemoryStore) Seen(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ids[id], nil
}

// Highest implements Store.
func (m *MemoryStore) Highest(_ context.Context, election string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.highest[election], nil
}

// Record implements Store.
func (m *MemoryStore) Record(_ context.Context, id, election string, term uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids[id] = true
	if term > m.highest[election] {
		m.highest[election] = term
	}
	return nil
}

// Receiver handles elector's webhook deliveries.
type Receiver struct {
	keys  [][]byte
	store Store
	log   *slog.Logger
	now   func() time.Time
}

// NewReceiver returns a Receiver that accepts deliveries signed with any
// of secrets ("whsec_…"). Errors: a missing or malformed secret.
func NewReceiver(secrets []string, store Store, log *slog.Logger) (*Receiver, error) {
	if len(secrets) == 0 {
		return nil, errors.New("ELECTOR_WEBHOOK_SECRET is not set")
	}
	r := &Receiver{store: store, log: log, now: time.Now}
	for _, s := range secrets {
		key, err := parseSecret(s)
		if err != nil {
			return nil, err
		}
		r.keys = append(r.keys, key)
	}
	return r, nil
}

// event is the part of elector's event payload the receiver reads.
type event struct {
	Type string `json:"type"`
	Data struct {
		Election  string `json:"election"`
		Term      uint64 `json:"term"`
		Candidate struct {
			ID string `json:"id"`
		} `json:"candidate"`
		Reason string `json:"reason"`
	} `json:"data"`
}

// Outcome is the receiver's answer to one delivery.
type Outcome struct {
	Result    string `json:"result"` // applied, duplicate or stale
	Election  string `json:"election,omitempty"`
	Type      string `json:"type,omitempty"`
	Term      uint64 `json:"term,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	Action    string `json:"action,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Handle answers one function URL request: 401 for a delivery whose
// signature does not verify, 400 for one that is no elector event, 500
// when the store fails (elector retries), else 200 with the Outcome.
func (r *Receiver) Handle(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return respond(http.StatusBadRequest, Outcome{Error: "body is not base64"}), nil
		}
		body = b
	}
	h := req.Headers // lower-case names in function URL events
	id := h["webhook-id"]
	if err := Verify(r.keys, id, h["webhook-timestamp"], h["webhook-signature"], body, r.now()); err != nil {
		r.log.WarnContext(ctx, "refused a delivery", slog.String("webhook_id", id), slog.Any("err", err))
		return respond(http.StatusUnauthorized, Outcome{Error: err.Error()}), nil
	}
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type == "" || ev.Data.Election == "" {
		return respond(http.StatusBadRequest, Outcome{Error: "not an elector event"}), nil
	}
	out := Outcome{Election: ev.Data.Election, Type: ev.Type, Term: ev.Data.Term, Candidate: ev.Data.Candidate.ID}
	seen, err := r.store.Seen(ctx, id)
	if err != nil {
		return respond(http.StatusInternalServerError, Outcome{Error: "store unavailable"}), nil
	}
	if seen {
		out.Result = "duplicate"
		return respond(http.StatusOK, out), nil
	}
	highest, err := r.store.Highest(ctx, ev.Data.Election)
	if err != nil {
		return respond(http.StatusInternalServerError, Outcome{Error: "store unavailable"}), nil
	}
	if ev.Data.Term < highest {
		// A later leadership has begun: acting on this one would undo it.
		out.Result = "stale"
		if err := r.store.Record(ctx, id, ev.Data.Election, 0); err != nil {
			return respond(http.StatusInternalServerError, Outcome{Error: "store unavailable"}), nil
		}
		return respond(http.StatusOK, out), nil
	}
	out.Result, out.Action = "applied", action(ev)
	r.log.InfoContext(ctx, out.Action, slog.String("election", ev.Data.Election), slog.Uint64("term", ev.Data.Term))
	if err := r.store.Record(ctx, id, ev.Data.Election, ev.Data.Term); err != nil {
		return respond(http.StatusInternalServerError, Outcome{Error: "store unavailable"}), nil
	}
	return respond(http.StatusOK, out), nil
}

// action says what the event means; a real receiver acts on it here
// (start or stop a job, pass the term to what the leader guards).
func action(ev event) string {
	c, e, t := ev.Data.Candidate.ID, ev.Data.Election, ev.Data.Term
	switch ev.Type {
	case "leader.begin":
		return fmt.Sprintf("%s leads %s in term %d", c, e, t)
	case "leader.end":
		return fmt.Sprintf("%s stopped leading %s in term %d (%s)", c, e, t, ev.Data.Reason)
	case "leader.error":
		return fmt.Sprintf("%s failed to begin leading %s in term %d", c, e, t)
	}
	return fmt.Sprintf("%s in %s", ev.Type, e)
}

func respond(status int, o Outcome) events.LambdaFunctionURLResponse {
	b, _ := json.Marshal(o)
	return events.LambdaFunctionURLResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(b),
	}
}
