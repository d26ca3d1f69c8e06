package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Errors of endpoint management. Validation errors are
// *gateway.ValidationError (errors.Is(err, gateway.ErrInvalid)).
var (
	ErrEndpointNotFound = errors.New("webhooks: no such subscription or endpoint")
	ErrDeliveryNotFound = errors.New("webhooks: no such delivery")
	ErrNotRedeliverable = errors.New("webhooks: a gap record has no event to redeliver")
	ErrInvalidURL       = errors.New("webhooks: invalid endpoint URL")
)

// MaxSubscriptions bounds the subscriptions of one election.
const MaxSubscriptions = 100

func invalid(field, format string, args ...any) error {
	return &gateway.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// checkURL is CheckURL with invalid URLs as validation errors of field.
func (s *Service) checkURL(ctx context.Context, field, raw string) error {
	err := CheckURL(ctx, raw, s.cfg.AllowPrivateNetworks, s.cfg.Resolver)
	if errors.Is(err, ErrInvalidURL) {
		return invalid(field, "%s", strings.TrimPrefix(err.Error(), ErrInvalidURL.Error()+": "))
	}
	return err
}

// startCursor is the id of the last event of election so far, after which
// a new endpoint's deliveries start.
func (s *Service) startCursor(ctx context.Context, election string) (string, error) {
	e, err := s.gw.Election(ctx, election)
	if errors.Is(err, gateway.ErrElectionNotFound) {
		_, cursor, err := s.gw.Elections(ctx)
		return cursor, err
	}
	return e.Cursor, err
}

// SubscriptionRequest asks for a subscription to an election's events.
type SubscriptionRequest struct {
	URL   string
	Types []gateway.EventType // empty: every type
	// Secret, if given, signs the deliveries (whsec_ and base64 of 24 to 64
	// bytes); else one is generated.
	Secret string
}

// CreateSubscription subscribes req.URL to the events of election that
// happen from now on. It returns the subscription and its secret, which
// is shown only here. Errors: gateway.ErrInvalid (a *ValidationError),
// ErrDestinationRefused, gateway.ErrLimit, the KV's.
func (s *Service) CreateSubscription(ctx context.Context, election string, req SubscriptionRequest) (Endpoint, string, error) {
	if err := gateway.ValidateElectionName(election); err != nil {
		return Endpoint{}, "", err
	}
	if req.URL == "" {
		return Endpoint{}, "", invalid("url", "is required: the https URL that receives the webhooks")
	}
	if err := s.checkURL(ctx, "url", req.URL); err != nil {
		return Endpoint{}, "", err
	}
	var types []gateway.EventType
	for _, t := range req.Types {
		if !slices.Contains(gateway.EventTypes, t) {
			return Endpoint{}, "", invalid("types", "%q is not an event type; use %s", clip(string(t)), typeList())
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	secret := req.Secret
	if secret == "" {
		secret = NewSecret()
	} else if err := ValidateSecret(secret); err != nil {
		return Endpoint{}, "", invalid("secret", "must be whsec_ followed by the base64 of %d to %d random bytes", MinSecretBytes, MaxSecretBytes)
	}
	existing, err := s.Subscriptions(ctx, election)
	if err != nil {
		return Endpoint{}, "", err
	}
	if len(existing) >= MaxSubscriptions {
		return Endpoint{}, "", fmt.Errorf("webhooks: election %q has %d subscriptions: %w", election, len(existing), gateway.ErrLimit)
	}
	start, err := s.startCursor(ctx, election)
	if err != nil {
		return Endpoint{}, "", err
	}
	now := s.now().UTC()
	ep := Endpoint{
		ID: newID("sub_"), Kind: KindSubscription, Election: election, URL: req.URL, Types: types,
		Secrets: []Secret{{Value: secret, CreatedAt: now}}, CreatedAt: now, Start: start,
	}
	if _, err := createJSON(ctx, s.kv, endpointKey(election, ep.ID), ep); err != nil {
		return Endpoint{}, "", err
	}
	s.nudge()
	return ep, secret, nil
}

func typeList() string {
	var out []string
	for _, t := range gateway.EventTypes {
		out = append(out, string(t))
	}
	return strings.Join(out, ", ")
}

// Subscriptions lists the subscriptions of election, oldest first.
func (s *Service) Subscriptions(ctx context.Context, election string) ([]Endpoint, error) {
	if err := gateway.ValidateElectionName(election); err != nil {
		return nil, err
	}
	eps, err := listJSON[Endpoint](ctx, s.kv, endpointsKey(election))
	if err != nil {
		return nil, err
	}
	eps = slices.DeleteFunc(eps, func(e Endpoint) bool { return e.Kind != KindSubscription })
	slices.SortFunc(eps, func(a, b Endpoint) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return eps, nil
}

// Subscription returns one subscription. Errors: ErrEndpointNotFound.
func (s *Service) Subscription(ctx context.Context, election, id string) (Endpoint, error) {
	return s.endpoint(ctx, election, id, KindSubscription)
}

func (s *Service) endpoint(ctx context.Context, election, id string, kind Kind) (Endpoint, error) {
	if err := gateway.ValidateElectionName(election); err != nil {
		return Endpoint{}, err
	}
	if gateway.ValidateKey(id) != nil || strings.Contains(id, "/") {
		return Endpoint{}, fmt.Errorf("%w: %q", ErrEndpointNotFound, clip(id))
	}
	ep, _, err := getJSON[Endpoint](ctx, s.kv, endpointKey(election, id))
	if errors.Is(err, gateway.ErrKeyNotFound) || (err == nil && ep.Kind != kind) {
		return Endpoint{}, fmt.Errorf("%w: %q in %q", ErrEndpointNotFound, id, election)
	}
	return ep, err
}

// DeleteSubscription removes a subscription, its cursor and its delivery
// log; a worker delivering to it stops before its next attempt. Errors:
// ErrEndpointNotFound.
func (s *Service) DeleteSubscription(ctx context.Context, election, id string) error {
	ep, err := s.Subscription(ctx, election, id)
	if err != nil {
		return err
	}
	return s.remove(ctx, ep)
}

// remove deletes an endpoint and everything kept for it.
func (s *Service) remove(ctx context.Context, ep Endpoint) error {
	if err := s.kv.Delete(ctx, endpointKey(ep.Election, ep.ID), 0); err != nil {
		return err
	}
	_ = s.kv.Delete(ctx, cursorKey(ep.ID), 0)
	items, err := s.kv.List(ctx, deliveriesKey(ep.ID))
	if err != nil {
		return nil // the endpoint is gone; its log is unreachable garbage
	}
	for _, it := range items {
		_ = s.kv.Delete(ctx, it.Key, 0)
	}
	return nil
}

// RotateSecret gives a subscription a new secret, returned only here. The
// previous one keeps signing beside it for Config.SecretOverlap, so that
// receivers can switch without losing a delivery; older ones stop.
// Errors: ErrEndpointNotFound.
func (s *Service) RotateSecret(ctx context.Context, election, id string) (Endpoint, string, error) {
	if _, err := s.Subscription(ctx, election, id); err != nil {
		return Endpoint{}, "", err
	}
	secret := NewSecret()
	ep, err := modify(ctx, s.kv, endpointKey(election, id), func(e *Endpoint) error {
		now := s.now().UTC()
		var kept []Secret
		for _, x := range e.Secrets {
			if x.ExpiresAt.IsZero() {
				x.ExpiresAt = now.Add(s.cfg.SecretOverlap)
			}
			if x.ExpiresAt.After(now) {
				kept = append(kept, x)
			}
		}
		e.Secrets = append([]Secret{{Value: secret, CreatedAt: now}}, kept...)
		return nil
	})
	if errors.Is(err, gateway.ErrKeyNotFound) {
		return Endpoint{}, "", fmt.Errorf("%w: %q in %q", ErrEndpointNotFound, id, election)
	}
	return ep, secret, err
}

// Deliveries lists the delivery log of a subscription, newest first, at
// most limit records (all with limit 0). Errors: ErrEndpointNotFound.
func (s *Service) Deliveries(ctx context.Context, election, id string, limit int) ([]Delivery, error) {
	if _, err := s.Subscription(ctx, election, id); err != nil {
		return nil, err
	}
	return s.deliveries(ctx, id, limit)
}

func (s *Service) deliveries(ctx context.Context, endpoint string, limit int) ([]Delivery, error) {
	ds, err := listJSON[Delivery](ctx, s.kv, deliveriesKey(endpoint))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ds, func(a, b Delivery) int { return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID)) })
	if limit > 0 && len(ds) > limit {
		ds = ds[:limit]
	}
	return ds, nil
}

// Delivery returns one delivery of a subscription. Errors:
// ErrEndpointNotFound, ErrDeliveryNotFound.
func (s *Service) Delivery(ctx context.Context, election, id, delivery string) (Delivery, error) {
	if _, err := s.Subscription(ctx, election, id); err != nil {
		return Delivery{}, err
	}
	return s.delivery(ctx, id, delivery)
}

func (s *Service) delivery(ctx context.Context, endpoint, delivery string) (Delivery, error) {
	if gateway.ValidateKey(delivery) != nil || strings.Contains(delivery, "/") {
		return Delivery{}, fmt.Errorf("%w: %q", ErrDeliveryNotFound, clip(delivery))
	}
	d, _, err := getJSON[Delivery](ctx, s.kv, deliveryKey(endpoint, delivery))
	if errors.Is(err, gateway.ErrKeyNotFound) {
		return Delivery{}, fmt.Errorf("%w: %q", ErrDeliveryNotFound, delivery)
	}
	return d, err
}

// Redeliver sends a recorded delivery of a subscription again, now, with
// the same webhook-id and the current secrets, and records the attempt
// (marked manual). A success settles a pending or failed delivery. It
// returns the updated record. Errors: ErrEndpointNotFound,
// ErrDeliveryNotFound, ErrNotRedeliverable, the KV's.
func (s *Service) Redeliver(ctx context.Context, election, id, delivery string) (Delivery, error) {
	ep, err := s.Subscription(ctx, election, id)
	if err != nil {
		return Delivery{}, err
	}
	return s.redeliver(ctx, ep, delivery)
}

func (s *Service) redeliver(ctx context.Context, ep Endpoint, delivery string) (Delivery, error) {
	d, err := s.delivery(ctx, ep.ID, delivery)
	if err != nil {
		return Delivery{}, err
	}
	if d.Status == StatusGap || len(d.Payload) == 0 {
		return Delivery{}, ErrNotRedeliverable
	}
	a, o := s.send(ctx, ep, d.EventID, d.Payload, s.cfg.RequestTimeout)
	s.cfg.Metrics.Attempt(attemptOutcome(a, o), a.Latency)
	a.Manual = true
	d, err = modify(ctx, s.kv, deliveryKey(ep.ID, delivery), func(d *Delivery) error {
		d.record(a, s.now())
		if o.ok {
			d.Status, d.Error, d.NextAttemptAt = StatusSucceeded, "", time.Time{}
		}
		return nil
	})
	if errors.Is(err, gateway.ErrKeyNotFound) {
		return Delivery{}, fmt.Errorf("%w: %q", ErrDeliveryNotFound, delivery)
	}
	return d, err
}

// pruneSoon deletes the oldest delivery records of an endpoint beyond
// Config.KeepDeliveries, checking every few deliveries.
func (s *Service) pruneSoon(ctx context.Context, endpoint string) {
	s.mu.Lock()
	s.created++
	due := s.created%25 == 0
	s.mu.Unlock()
	if !due {
		return
	}
	ds, err := s.deliveries(ctx, endpoint, 0)
	if err != nil || len(ds) <= s.cfg.KeepDeliveries {
		return
	}
	for _, d := range ds[s.cfg.KeepDeliveries:] {
		_ = s.kv.Delete(ctx, deliveryKey(endpoint, d.ID), 0)
	}
}
