package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/client"
)

// electionSettings are the flags of elector election that change a
// setting.
type electionSettings struct {
	holders                      int
	errorCooldown, handoverDelay time.Duration
	preempt                      bool
}

// electionFlags adds the settings' flags of elector election.
func electionFlags(fs *pflag.FlagSet, f *clientFlags) {
	fs.IntVar(&f.settings.holders, "holders", 1, "how many candidates hold the election at once, 1 to 64 (above 1 needs the embedded or nats backend)")
	fs.DurationVar(&f.settings.errorCooldown, "error-cooldown", 0, "how long a candidate in error stays out of line")
	fs.DurationVar(&f.settings.handoverDelay, "handover-delay", 0, "how long the next leader waits after a leader expires")
	fs.BoolVar(&f.settings.preempt, "preempt", false, "whether a follower of higher priority than the leader takes over")
}

// electionCmd prints an election, after changing the settings whose flags
// were given (a PATCH: the others stay as they are).
func electionCmd(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
	var p client.SettingsPatch
	changed := false
	if f.fs.Changed("holders") {
		p.Holders, changed = &f.settings.holders, true
	}
	if f.fs.Changed("error-cooldown") {
		p.ErrorCooldown, changed = &f.settings.errorCooldown, true
	}
	if f.fs.Changed("handover-delay") {
		p.HandoverDelay, changed = &f.settings.handoverDelay, true
	}
	if f.fs.Changed("preempt") {
		p.Preempt, changed = &f.settings.preempt, true
	}
	var (
		e   client.Election
		err error
	)
	if changed {
		e, err = c.Configure(ctx, f.election, p)
	} else {
		e, err = c.Election(ctx, f.election)
	}
	if err == nil {
		out.line(e, electionText(e))
	}
	return err
}

// electionText is an election on a few lines for people.
func electionText(e client.Election) string {
	var b strings.Builder
	holders := max(e.Settings.Holders, 1)
	fmt.Fprintf(&b, "%s: term %d, %d candidates\n", e.Name, e.Term, e.Candidates)
	switch {
	case e.Leader == nil:
		b.WriteString("leader: none")
		if !e.HandoverUntil.IsZero() {
			fmt.Fprintf(&b, " (the next is held back until %s)", e.HandoverUntil.Format(time.RFC3339))
		}
		b.WriteString("\n")
	case holders > 1:
		fmt.Fprintf(&b, "holders: %s\n", holderList(e.Holders))
	default:
		fmt.Fprintf(&b, "leader: %s (term %d)\n", e.Leader.ID, e.Leader.Term)
	}
	if e.Transfer != nil {
		fmt.Fprintf(&b, "transfer pending: %s to %s (%s)\n", e.Transfer.From, e.Transfer.To, e.Transfer.Reason)
	}
	fmt.Fprintf(&b, "settings: holders %d, error_cooldown %s, handover_delay %s, preempt %v",
		holders, e.Settings.ErrorCooldown, e.Settings.HandoverDelay, e.Settings.Preempt)
	return b.String()
}

// leaderText is the answer of elector leader: the leader, or with several
// holders every holder, the longest-standing first.
func leaderText(l client.Leader) string {
	if len(l.Holders) == 0 {
		return fmt.Sprintf("%s (term %d, since %s)", l.ID, l.Term, l.Since.Format(time.RFC3339))
	}
	var b strings.Builder
	for i, h := range l.Holders {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (term %d, since %s)", h.ID, h.Term, h.Since.Format(time.RFC3339))
	}
	return b.String()
}

// holderList is "node-a (term 7), node-b (term 9)".
func holderList(hs []client.Leader) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%s (term %d)", h.ID, h.Term)
	}
	return strings.Join(parts, ", ")
}
