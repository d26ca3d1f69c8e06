package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints s for people: the run's shape, a table of operations
// with their rate and latency percentiles, and the errors by problem type
// and by HTTP status.
func WriteText(w io.Writer, s Summary) error {
	var b strings.Builder
	plural := func(n int, word string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, word)
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	fmt.Fprintf(&b, "elector bench against %s (%s)\n", plural(len(s.Gateways), "gateway"), strings.Join(s.Gateways, ", "))
	fmt.Fprintf(&b, "%s in %s, TTL %s (heartbeat every %s) over %s; %s, %s, burst of %d\n",
		plural(s.Candidates, "candidate"), plural(s.Elections, "election"),
		secs(s.TTLSeconds), secs(s.IntervalSecs), plural(s.Connections, "connection"),
		plural(s.Subscribers, "subscriber"), plural(s.Readers, "reader"), s.Burst)
	fmt.Fprintf(&b, "ran %s, elections %s-*\n\n", secs(s.DurationSecs), s.Prefix)

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation     \tcount\trate/s\tp50\tp90\tp99\tmax\terrors\t")
	for k := range numKinds {
		op, ok := s.Operations[k.String()]
		if !ok {
			continue
		}
		r := formatRate(op.Rate)
		if k == ScheduleLag {
			r = "" // a lag is not an operation
		}
		l := op.Latency
		fmt.Fprintf(tw, "%-14s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", k, op.Count, r,
			millis(l.P50), millis(l.P90), millis(l.P99), millis(l.Max), op.Errors)
	}
	_ = tw.Flush()

	if s.Errors.Total == 0 {
		b.WriteString("\nerrors: none\n")
	} else {
		fmt.Fprintf(&b, "\nerrors: %d\n  by type:\n", s.Errors.Total)
		for _, k := range sortedKeys(s.Errors.ByType) {
			fmt.Fprintf(&b, "    %8d  %s\n", s.Errors.ByType[k], k)
		}
		b.WriteString("  by status:\n")
		for _, k := range sortedKeys(s.Errors.ByStatus) {
			fmt.Fprintf(&b, "    %8d  %s\n", s.Errors.ByStatus[k], k)
		}
	}
	if s.Candidates > 0 {
		fmt.Fprintf(&b, "leaders when the load stopped: %d of %d elections; resigned %d of %d candidates",
			s.Leaders, s.Elections, s.Resigned, s.Candidates)
		if s.Unresigned > 0 {
			fmt.Fprintf(&b, " (%d could not be: they expire after their TTL)", s.Unresigned)
		}
		b.WriteString("\n")
	}
	if s.Removed > 0 || s.Kept != "" {
		fmt.Fprintf(&b, "elections removed: %d", s.Removed)
		if s.Kept != "" {
			fmt.Fprintf(&b, " (%s)", s.Kept)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ProgressLine describes the run between two snapshots in one line:
// elapsed time, rates since prev, errors so far and leaders.
func ProgressLine(prev, cur Progress) string {
	dt := (cur.Elapsed - prev.Elapsed).Seconds()
	per := func(k Kind) string {
		if dt <= 0 {
			return "0"
		}
		return formatRate(float64(cur.Ops[k]-prev.Ops[k]) / dt)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6s  heartbeats %s/s  campaigns %s/s", cur.Elapsed.Truncate(100*time.Millisecond), per(Heartbeat), per(Campaign))
	if cur.Ops[LeaderRead] > 0 {
		fmt.Fprintf(&b, "  reads %s/s", per(LeaderRead))
	}
	if cur.Ops[BurstCampaign] > 0 {
		fmt.Fprintf(&b, "  burst %s/s", per(BurstCampaign))
	}
	if cur.Ops[Event] > 0 {
		fmt.Fprintf(&b, "  events %s/s", per(Event))
	}
	fmt.Fprintf(&b, "  leaders %d  errors %d", cur.Leaders, cur.Errors)
	return b.String()
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

func millis(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 10:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fms", v)
	}
}
