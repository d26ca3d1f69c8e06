package main

import (
	"context"

	"github.com/electorhq/elector/client"
)

// stream is a running Watch or Observe.
type stream struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when its reports have ended
}

// follow starts a Watch (reporting "observed" for each event) or an
// Observe (reporting "leader" for each value) of the first gateway and
// answers once its first connection is open.
func (d *driver) follow(c command) (any, error) {
	if c.Name == "" || len(c.Gateways) == 0 {
		return nil, badCommand("%s needs name and gateways", c.Cmd)
	}
	cl := client.New(c.Gateways[0], clientOptions(c)...)
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{cancel: cancel, done: make(chan struct{})}
	name := c.Name
	if c.Cmd == "observe" {
		leaders, err := cl.Observe(ctx, c.Election)
		if err != nil {
			cancel()
			return nil, err
		}
		go func() {
			defer close(s.done)
			for l := range leaders {
				d.report("leader", name, map[string]any{"leader": l.ID, "term": l.Term, "at_ms": nowMS()})
			}
		}()
	} else {
		events, err := cl.Watch(ctx, c.Election, c.LastEventID)
		if err != nil {
			cancel()
			return nil, err
		}
		go func() {
			defer close(s.done)
			for ev := range events {
				d.report("observed", name, observed(ev))
			}
		}()
	}
	d.mu.Lock()
	old := d.streams[name]
	d.streams[name] = s
	d.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
	}
	return struct{}{}, nil
}

// observed is the report of one event.
func observed(ev client.Event) map[string]any {
	m := map[string]any{"id": ev.ID, "type": ev.Type, "term": ev.Data.Term, "at_ms": nowMS()}
	if ev.Data.Candidate != nil {
		m["candidate"] = ev.Data.Candidate.ID
	}
	if ev.Data.Reason != "" {
		m["reason"] = ev.Data.Reason
	}
	if s := ev.Snapshot; s != nil {
		m["term"] = s.Term
		if s.Leader != nil {
			m["candidate"] = s.Leader.ID
		}
	}
	return m
}

// stop ends a Watch or Observe and waits for its last report.
func (d *driver) stop(name string) (any, error) {
	d.mu.Lock()
	s, ok := d.streams[name]
	delete(d.streams, name)
	d.mu.Unlock()
	if !ok {
		return nil, badCommand("no watch or observe %q", name)
	}
	s.cancel()
	<-s.done
	return struct{}{}, nil
}
