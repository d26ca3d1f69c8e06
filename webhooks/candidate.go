package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Bounds of a candidate's own begin timeout.
const (
	MinBeginTimeout = time.Second
	MaxBeginTimeout = time.Hour
)

// CandidateWebhook is the endpoint a candidate gives when it campaigns, for
// its own leader.begin, leader.end and leader.error.
type CandidateWebhook struct {
	URL string
	// BeginTimeout, if not 0, replaces Config.BeginTimeout for this
	// candidate: its leader.begin must be acknowledged with a 2xx within
	// it, or it is put in error.
	BeginTimeout time.Duration
}

// PendingCandidate is a checked candidate endpoint whose campaign has not
// happened yet.
type PendingCandidate struct {
	s        *Service
	election string
	w        CandidateWebhook
	start    string
}

// PrepareCandidate checks w before the campaign and notes the election's
// current event, so that the endpoint receives every event of the
// candidacy, its first leader.begin included, even though the endpoint is
// stored after the campaign. Errors: gateway.ErrInvalid (field
// webhook.url or webhook.begin_timeout), ErrDestinationRefused, the
// backend's.
func (s *Service) PrepareCandidate(ctx context.Context, election string, w CandidateWebhook) (*PendingCandidate, error) {
	if err := gateway.ValidateElectionName(election); err != nil {
		return nil, err
	}
	if w.URL == "" {
		return nil, invalid("webhook.url", "is required: the https URL that receives this candidate's leader.begin, leader.end and leader.error")
	}
	if err := s.checkURL(ctx, "webhook.url", w.URL); err != nil {
		return nil, err
	}
	if w.BeginTimeout != 0 && (w.BeginTimeout < MinBeginTimeout || w.BeginTimeout > MaxBeginTimeout) {
		return nil, invalid("webhook.begin_timeout", "must be between %s and %s, got %s", MinBeginTimeout, MaxBeginTimeout, w.BeginTimeout)
	}
	start, err := s.startCursor(ctx, election)
	if err != nil {
		return nil, err
	}
	return &PendingCandidate{s: s, election: election, w: w, start: start}, nil
}

// Register stores the endpoint of candidate id, whose campaign returned
// token, and returns the endpoint's signing secret, shown only here. The
// endpoint goes away when the candidate leaves the election. If Register
// fails the caller should resign the candidate: it would lead without the
// begin handler it asked for.
func (p *PendingCandidate) Register(ctx context.Context, id, token string) (string, error) {
	s := p.s
	secret := NewSecret()
	now := s.now().UTC()
	ep := Endpoint{
		ID: newID("cep_"), Kind: KindCandidate, Election: p.election, URL: p.w.URL,
		Secrets: []Secret{{Value: secret, CreatedAt: now}}, CreatedAt: now, Start: p.start,
		Candidate: id, TokenHash: gateway.HashToken(token), BeginTimeout: p.w.BeginTimeout,
	}
	if _, err := createJSON(ctx, s.kv, endpointKey(p.election, ep.ID), ep); err != nil {
		return "", fmt.Errorf("webhooks: store the endpoint of %q: %w", id, err)
	}
	s.nudge()
	return secret, nil
}

// candidateEndpoint finds the endpoint of candidate id that token proves
// to be its own. Errors: ErrEndpointNotFound, gateway.ErrTokenMismatch.
func (s *Service) candidateEndpoint(ctx context.Context, election, id, token string) (Endpoint, error) {
	if err := gateway.ValidateElectionName(election); err != nil {
		return Endpoint{}, err
	}
	eps, err := listJSON[Endpoint](ctx, s.kv, endpointsKey(election))
	if err != nil {
		return Endpoint{}, err
	}
	var found *Endpoint
	for i, ep := range eps {
		if ep.Kind == KindCandidate && ep.Candidate == id && (found == nil || ep.CreatedAt.After(found.CreatedAt)) {
			found = &eps[i]
		}
	}
	if found == nil {
		return Endpoint{}, fmt.Errorf("%w: candidate %q in %q has no webhook", ErrEndpointNotFound, id, election)
	}
	if !gateway.TokenMatches(found.TokenHash, gateway.HashToken(token)) {
		return Endpoint{}, fmt.Errorf("webhooks: candidate %q: %w", id, gateway.ErrTokenMismatch)
	}
	return *found, nil
}

// CandidateDeliveries lists the delivery log of a candidate's own
// endpoint, newest first, at most limit (all with 0). Errors:
// ErrEndpointNotFound, gateway.ErrTokenMismatch.
func (s *Service) CandidateDeliveries(ctx context.Context, election, id, token string, limit int) ([]Delivery, error) {
	ep, err := s.candidateEndpoint(ctx, election, id, token)
	if err != nil {
		return nil, err
	}
	return s.deliveries(ctx, ep.ID, limit)
}

// RedeliverCandidate sends a delivery of a candidate's own endpoint again,
// as Redeliver. Errors: ErrEndpointNotFound, gateway.ErrTokenMismatch,
// ErrDeliveryNotFound, ErrNotRedeliverable.
func (s *Service) RedeliverCandidate(ctx context.Context, election, id, token, delivery string) (Delivery, error) {
	ep, err := s.candidateEndpoint(ctx, election, id, token)
	if err != nil {
		return Delivery{}, err
	}
	return s.redeliver(ctx, ep, delivery)
}
