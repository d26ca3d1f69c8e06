package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/electorhq/elector/client"
)

// callTimeout bounds one plain call.
const callTimeout = 30 * time.Second

// callArgs are the args of a call, in the API's names.
type callArgs struct {
	Election string          `json:"election"`
	ID       string          `json:"id"`
	TTL      string          `json:"ttl"`
	Metadata json.RawMessage `json:"metadata"`
	Priority int             `json:"priority"`
	Reason   string          `json:"reason"`
	To       string          `json:"to"`
	Session  string          `json:"session"`
}

// duration reads a duration arg; "" is 0.
func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, badCommand("ttl: %v", err)
	}
	return d, nil
}

// clientOptions are the options of a client for c's API token.
func clientOptions(c command) []client.Option {
	if c.APIToken == "" {
		return nil
	}
	return []client.Option{client.WithAPIToken(c.APIToken)}
}

// call makes one plain call of the client, against the first gateway, and
// returns the answer in the API's field names.
func (d *driver) call(c command) (any, error) {
	if len(c.Gateways) == 0 {
		return nil, badCommand("call needs gateways")
	}
	cl := client.New(c.Gateways[0], clientOptions(c)...)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	a := c.Args
	switch c.Op {
	case "campaign":
		r := client.CampaignRequest{ID: a.ID, Metadata: a.Metadata, Priority: a.Priority, Session: a.Session}
		if a.Session != "" {
			r.SessionToken = c.Token
		}
		ttl, err := duration(a.TTL)
		if err != nil {
			return nil, err
		}
		r.TTL = ttl
		st, token, err := cl.Campaign(ctx, a.Election, r)
		return struct {
			client.Status
			Token string `json:"token"`
		}{st, token}, err
	case "open_session":
		ttl, err := duration(a.TTL)
		if err != nil {
			return nil, err
		}
		s, token, err := cl.OpenSession(ctx, ttl)
		return struct {
			client.Session
			Token string `json:"token"`
		}{s, token}, err
	case "heartbeat_session":
		return cl.HeartbeatSession(ctx, a.Session, c.Token)
	case "close_session":
		return struct{}{}, cl.CloseSession(ctx, a.Session, c.Token)
	case "heartbeat":
		return cl.Heartbeat(ctx, a.Election, a.ID, c.Token)
	case "resign":
		return struct{}{}, cl.Resign(ctx, a.Election, a.ID, c.Token)
	case "report_error":
		return cl.ReportError(ctx, a.Election, a.ID, c.Token, a.Reason)
	case "leader":
		return cl.Leader(ctx, a.Election)
	case "candidates":
		return cl.Candidates(ctx, a.Election)
	case "election":
		return cl.Election(ctx, a.Election)
	case "transfer":
		return cl.Transfer(ctx, a.Election, a.To, c.Token)
	case "handover":
		return cl.Handover(ctx, a.Election, a.ID, c.Token)
	default:
		return nil, badCommand("unknown op %q", c.Op)
	}
}

// verifyWebhook checks a delivery with client.ReadWebhook.
func verifyWebhook(c command) (any, error) {
	r, err := http.NewRequest(http.MethodPost, "http://receiver/", strings.NewReader(c.Body))
	if err != nil {
		return nil, badCommand("%v", err)
	}
	for k, v := range c.Headers {
		r.Header.Set(k, v)
	}
	ev, err := client.ReadWebhook(r, c.Secret)
	if err != nil {
		return map[string]any{"valid": false, "message": err.Error()}, nil
	}
	return map[string]any{"valid": true, "event": ev.Raw}, nil
}

// sentinels name the client's errors: the "class" of a problem.
var sentinels = []struct {
	err  error
	name string
}{
	{client.ErrInvalidRequest, "ErrInvalidRequest"},
	{client.ErrCandidateTokenMissing, "ErrCandidateTokenMissing"},
	{client.ErrTokenMismatch, "ErrTokenMismatch"},
	{client.ErrElectionNotFound, "ErrElectionNotFound"},
	{client.ErrCandidateNotFound, "ErrCandidateNotFound"},
	{client.ErrNoLeader, "ErrNoLeader"},
	{client.ErrNotFound, "ErrNotFound"},
	{client.ErrCandidateExists, "ErrCandidateExists"},
	{client.ErrLimitReached, "ErrLimitReached"},
	{client.ErrRateLimited, "ErrRateLimited"},
	{client.ErrUnauthenticated, "ErrUnauthenticated"},
	{client.ErrForbidden, "ErrForbidden"},
	{client.ErrUnavailable, "ErrUnavailable"},
	{client.ErrInternal, "ErrInternal"},
	{client.ErrTransferPending, "ErrTransferPending"},
	{client.ErrNotFollower, "ErrNotFollower"},
	{client.ErrNotLeader, "ErrNotLeader"},
	{client.ErrNoTransfer, "ErrNoTransfer"},
	{client.ErrNotSupported, "ErrNotSupported"},
	{client.ErrTransferBlocked, "ErrTransferBlocked"},
	{client.ErrSessionTokenMissing, "ErrSessionTokenMissing"},
	{client.ErrSessionTokenMismatch, "ErrSessionTokenMismatch"},
	{client.ErrSessionNotFound, "ErrSessionNotFound"},
	{client.ErrSessionInElection, "ErrSessionInElection"},
}

// errorOf is the error member of a failed reply.
func errorOf(err error) map[string]any {
	var de driverError
	if errors.As(err, &de) {
		return map[string]any{"kind": "driver", "message": de.msg}
	}
	var p *client.Problem
	if errors.As(err, &p) {
		class := "*client.Problem"
		for _, s := range sentinels {
			if errors.Is(err, s.err) {
				class = s.name
				break
			}
		}
		return map[string]any{"kind": "problem", "type": p.Type, "status": p.Status, "class": class, "message": err.Error()}
	}
	return map[string]any{"kind": "transport", "message": err.Error()}
}
