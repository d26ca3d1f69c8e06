package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electorhq/elector/client"
)

// A candidate campaigns, learns from its heartbeat that it leads, and
// resigns; a second candidate takes over with the next term.
func Example() {
	srv, stop := startGateway() // an in-process gateway; use your gateway's URL
	defer stop()
	ctx := context.Background()
	c := client.New(srv.URL)

	st, token, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", TTL: 6 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node-a:", st.State)
	_, tokenB, _ := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b", TTL: 6 * time.Second})

	// Heartbeat every TTL/3; the answer says whether you lead.
	st, err = c.Heartbeat(ctx, "billing", "node-a", token)
	if errors.Is(err, client.ErrCandidateNotFound) {
		fmt.Println("expired: campaign again")
		return
	}
	first := st.Term

	_ = c.Resign(ctx, "billing", "node-a", token)
	l, _ := c.Leader(ctx, "billing")
	fmt.Println("leader:", l.ID, "next term:", l.Term > first)
	_ = c.Resign(ctx, "billing", "node-b", tokenB)

	_, err = c.Leader(ctx, "billing")
	fmt.Println(errors.Is(err, client.ErrNoLeader))
	// Output:
	// node-a: leader
	// leader: node-b next term: true
	// true
}

// Watch follows an election: a reset snapshot first, then one event per
// transition, resuming by itself after a dropped connection.
func ExampleClient_Watch() {
	srv, stop := startGateway()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := client.New(srv.URL)
	_, token, _ := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a"})

	events, err := c.Watch(ctx, "billing", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Resign(ctx, "billing", "node-a", token)
	for ev := range events {
		switch ev.Type {
		case client.EventReset:
			fmt.Println("reset: leader", ev.Snapshot.Leader.ID)
		case client.EventLeaderEnd:
			fmt.Println(ev.Type, ev.Data.Candidate.ID, ev.Data.Reason)
		case client.EventCandidateLeft:
			fmt.Println(ev.Type, ev.Data.Candidate.ID)
			cancel() // the channel closes
		}
	}
	// Output:
	// reset: leader node-a
	// leader.end node-a resigned
	// candidate.left node-a
}

// A process that leads several elections opens one session, campaigns in
// each election inside it, and heartbeats the session alone; closing it
// resigns every candidacy at once.
func ExampleClient_OpenSession() {
	srv, stop := startGateway()
	defer stop()
	ctx := context.Background()
	c := client.New(srv.URL)

	s, token, err := c.OpenSession(ctx, 6*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	terms := map[string]uint64{} // the term each election is led with
	for _, election := range []string{"billing", "payroll"} {
		st, _, err := c.Campaign(ctx, election, client.CampaignRequest{ID: "node-a", Session: s.ID, SessionToken: token})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(election+":", st.State)
		if st.State == client.StateLeader {
			terms[election] = st.Term
		}
	}

	// Heartbeat the session every TTL/3. A leader stops acting at each
	// candidacy's step-down deadline unless the next heartbeat renews it,
	// and at once when the answer no longer shows it leading with its
	// term.
	sent := time.Now()
	s, err = c.HeartbeatSession(ctx, s.ID, token)
	if errors.Is(err, client.ErrSessionNotFound) {
		fmt.Println("expired: open another session and campaign again")
		return
	}
	for _, election := range []string{"billing", "payroll"} {
		term, leads := terms[election]
		if !leads {
			continue
		}
		if deadline, ok := s.StepDownDeadline(election, term, sent); ok {
			fmt.Println("renewed:", election, deadline.After(sent))
		} else {
			fmt.Println("deposed:", election) // stop acting now
			delete(terms, election)
		}
	}

	_ = c.CloseSession(ctx, s.ID, token)
	_, err = c.Leader(ctx, "payroll")
	fmt.Println(errors.Is(err, client.ErrNoLeader))
	// Output:
	// billing: leader
	// payroll: leader
	// renewed: billing true
	// renewed: payroll true
	// true
}

// KeepSession heartbeats a session by itself; a leader of one of its
// elections works under Lead's context, which ends by the step-down rule,
// and Close resigns every candidacy of the session at once.
func ExampleClient_KeepSession() {
	srv, stop := startGateway()
	defer stop()
	ctx := context.Background()
	c := client.New(srv.URL)

	k, err := c.KeepSession(ctx, client.SessionConfig{TTL: 6 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, sent, err := k.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("billing:", st.State)
	if st.State == client.StateLeader {
		lead, cancel := k.Lead(ctx, "billing", st.Term, sent)
		defer cancel()
		// Work as the leader, under lead and with st.Term as the fencing
		// token, until lead ends: its step-down deadline passed without a
		// heartbeat of the session, or an answer no longer shows it
		// leading with that term.
		fmt.Println("leading:", lead.Err() == nil)
		_ = k.Close(ctx)
		fmt.Println("after Close:", errors.Is(context.Cause(lead), client.ErrSessionEnded))
	}
	_, err = c.Leader(ctx, "billing")
	fmt.Println(errors.Is(err, client.ErrNoLeader))
	// Output:
	// billing: leader
	// leading: true
	// after Close: true
	// true
}
