package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// keeper is a running client.SessionKeeper and the leads it reports.
type keeper struct {
	k      *client.SessionKeeper
	cancel context.CancelFunc // ends the keeper's context: the heartbeats stop
	leads  sync.WaitGroup     // one per lead being reported
	closed chan struct{}      // closed when close began: the end is no surprise
}

// keepSession opens a session with Client.KeepSession and reports
// "session_ended", with the keeper's error, when it ends by itself.
func (d *driver) keepSession(c command) (any, error) {
	if c.Name == "" || c.TTLMS <= 0 || len(c.Gateways) == 0 {
		return nil, badCommand("keep_session needs name, gateways and ttl_ms")
	}
	d.mu.Lock()
	_, taken := d.keepers[c.Name]
	d.mu.Unlock()
	if taken {
		return nil, badCommand("a keeper %q is running", c.Name)
	}
	ttl := time.Duration(c.TTLMS * float64(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	k, err := client.New(c.Gateways[0], clientOptions(c)...).KeepSession(ctx, client.SessionConfig{
		TTL:    ttl,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)).With(slog.String("name", c.Name)),
	})
	if err != nil {
		cancel()
		return nil, err
	}
	e := &keeper{k: k, cancel: cancel, closed: make(chan struct{})}
	d.mu.Lock()
	d.keepers[c.Name] = e
	d.mu.Unlock()
	name := c.Name
	go func() {
		<-k.Done()
		select {
		case <-e.closed:
		default:
			d.report("session_ended", name, map[string]any{"error": errorOf(k.Err()), "at_ms": nowMS()})
		}
	}()
	return map[string]any{"session": k.ID(), "token": k.Token(),
		"margin_ms": float64(client.StepDownMargin(k.TTL())) / float64(time.Millisecond)}, nil
}

// keeperCampaign campaigns in the keeper's session; a leader is followed
// with SessionKeeper.Lead and reported under c.Lead: "leading" once the
// context is given, "stopped" (with the cause's words) when it ends.
func (d *driver) keeperCampaign(c command) (any, error) {
	if c.Lead == "" || c.Election == "" || c.Candidate == "" {
		return nil, badCommand("keeper_campaign needs name, lead, election and candidate")
	}
	d.mu.Lock()
	e, ok := d.keepers[c.Name]
	d.mu.Unlock()
	if !ok {
		return nil, badCommand("no keeper %q", c.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	st, sent, err := e.k.Campaign(ctx, c.Election, client.CampaignRequest{ID: c.Candidate})
	if err != nil {
		return nil, err
	}
	if st.State == client.StateLeader {
		lctx, _ := e.k.Lead(context.Background(), c.Election, st.Term, sent)
		d.report("leading", c.Lead, map[string]any{"term": st.Term, "at_ms": nowMS()})
		e.leads.Add(1)
		context.AfterFunc(lctx, func() {
			defer e.leads.Done()
			d.report("stopped", c.Lead, map[string]any{"term": st.Term, "reason": context.Cause(lctx).Error(), "at_ms": nowMS()})
		})
	}
	return st, nil
}

// closeKeeper closes the session (each candidacy resigns) and waits until
// every lead's stopped report is written. It reports whether name was a
// keeper's.
func (d *driver) closeKeeper(name string) (bool, error) {
	d.mu.Lock()
	e, ok := d.keepers[name]
	delete(d.keepers, name)
	d.mu.Unlock()
	if !ok {
		return false, nil
	}
	close(e.closed)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	err := e.k.Close(ctx)
	e.cancel()
	e.leads.Wait()
	return true, err
}
