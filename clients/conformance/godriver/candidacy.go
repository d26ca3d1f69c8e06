package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/electorhq/elector/client"
)

// candidacy is a running client.Candidacy and what its reports need.
type candidacy struct {
	cand   *client.Candidacy
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	// stoppedAt is when the leadership signal of the current term ended;
	// the callbacks, which never overlap, hand it from one to the other.
	stoppedAt float64
}

// start starts a Candidacy with the client's defaults and reports its
// leadership: "leading" when OnStartedLeading is called, "stopped" (at
// the moment its context ended, with OnStoppedLeading's reason), and
// "campaigned" for each campaign the gateway accepted.
func (d *driver) start(c command) (any, error) {
	if c.Name == "" || c.TTLMS <= 0 {
		return nil, badCommand("start needs name and ttl_ms")
	}
	d.mu.Lock()
	_, taken := d.cands[c.Name]
	d.mu.Unlock()
	if taken {
		return nil, badCommand("a candidacy %q is running", c.Name)
	}
	ttl := time.Duration(c.TTLMS * float64(time.Millisecond))
	e := &candidacy{done: make(chan struct{})}
	name := c.Name
	hc := &http.Client{Transport: campaignReporter{next: http.DefaultTransport, campaigned: func() {
		d.report("campaigned", name, map[string]any{"at_ms": nowMS()})
	}}}
	opts := []client.Option{client.WithHTTPClient(hc)}
	if c.APIToken != "" {
		opts = append(opts, client.WithAPIToken(c.APIToken))
	}
	cand, err := client.NewCandidacy(client.CandidacyConfig{
		Gateways: c.Gateways, ClientOptions: opts,
		Election: c.Election, ID: c.Candidate, TTL: ttl,
		Metadata: c.Metadata, Priority: c.Priority,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			d.report("leading", name, map[string]any{"term": term, "at_ms": nowMS()})
			ended := make(chan float64, 1)
			context.AfterFunc(ctx, func() { ended <- nowMS() })
			e.stoppedAt = <-ended
		},
		OnStoppedLeading: func(term uint64, reason string) {
			d.report("stopped", name, map[string]any{"term": term, "reason": reason, "at_ms": e.stoppedAt})
		},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)).With(slog.String("name", name)),
	})
	if err != nil {
		return nil, badCommand("%v", err)
	}
	e.cand = cand
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	d.mu.Lock()
	d.cands[name] = e
	d.mu.Unlock()
	go func() {
		defer close(e.done)
		if err := cand.Run(ctx); err != nil {
			d.log.Error("Run returned", slog.String("name", name), slog.Any("err", err))
		}
	}()
	return map[string]any{"margin_ms": float64(client.StepDownMargin(ttl)) / float64(time.Millisecond)}, nil
}

// close ends Run as a program's shutdown does (the candidacy resigns) and
// waits until it has returned: the leadership has ended and the callbacks
// have returned.
func (d *driver) close(name string) (any, error) {
	d.mu.Lock()
	e, ok := d.cands[name]
	delete(d.cands, name)
	d.mu.Unlock()
	if !ok {
		return nil, badCommand("no candidacy %q", name)
	}
	e.cancel()
	<-e.done
	return struct{}{}, nil
}

// reportError reports that the leader's work failed.
func (d *driver) reportError(c command) (any, error) {
	d.mu.Lock()
	e, ok := d.cands[c.Name]
	d.mu.Unlock()
	if !ok {
		return nil, badCommand("no candidacy %q", c.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return struct{}{}, e.cand.ReportError(ctx, c.Reason)
}

// campaignReporter is the transport of a candidacy's client: it calls
// campaigned for each campaign the gateway answered with 201.
type campaignReporter struct {
	next       http.RoundTripper
	campaigned func()
}

func (t campaignReporter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/candidates") && resp.StatusCode == http.StatusCreated {
		t.campaigned()
	}
	return resp, err
}
