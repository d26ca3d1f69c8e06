package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/server"
)

// envToken is where heartbeat and resign find the candidate token when
// --token is not given.
const envToken = "ELECTOR_CANDIDATE_TOKEN"

// clientFlags are the flags of the client commands.
type clientFlags struct {
	gateway, election, output string
	apiToken                  string
	id, token, metadata       string
	to, from                  string
	cancel                    bool
	// settings are the settings election changes, and fs the flag set,
	// which says which of them were given.
	settings    electionSettings
	fs          *pflag.FlagSet
	priority    int
	ttl         time.Duration
	lastEventID string
	local       bool // reads with consistency=local
}

// readFlags are the flags of the commands that only read elections.
func readFlags(fs *pflag.FlagSet, f *clientFlags) {
	fs.BoolVar(&f.local, "local", false, "answer from the gateway's own copy without asking the backend first (consistency=local): cheaper, possibly a moment behind another gateway's write")
}

// readContext is ctx, asking for local reads with --local.
func (f *clientFlags) readContext(ctx context.Context) context.Context {
	if f.local {
		return client.WithLocalRead(ctx)
	}
	return ctx
}

// clientCommand is one command that talks to a gateway.
type clientCommand struct {
	name string
	// synopsis is the command line, summary what it does (usage, help and
	// completion show them).
	synopsis, summary string
	// flags adds the command's own flags to those every client command has.
	flags func(fs *pflag.FlagSet, f *clientFlags)
	// run sends the command's request and prints the answer.
	run func(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error
}

// clientCommands are the commands that talk to a gateway; the top-level
// command table (commands) lists each.
var clientCommands = []clientCommand{
	{"campaign", "campaign --election E [--id ID] [--ttl 10s] [--priority N] [--metadata JSON]", "enter the election; prints the token",
		func(fs *pflag.FlagSet, f *clientFlags) {
			fs.StringVar(&f.id, "id", "", "the candidate's id (default the host name)")
			fs.DurationVar(&f.ttl, "ttl", 0, "the candidacy's TTL (default the gateway's)")
			fs.IntVar(&f.priority, "priority", 0, "the candidate's priority: higher goes first in line")
			fs.StringVar(&f.metadata, "metadata", "", "the candidate's metadata, a JSON object")
		}, campaignCmd},
	{"heartbeat", "heartbeat --election E --id ID --token T", "keep the candidacy alive; prints its state",
		candidateFlags,
		func(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
			st, err := c.Heartbeat(ctx, f.election, f.id, f.token)
			if err == nil {
				out.status(st, "")
			}
			return err
		}},
	{"resign", "resign --election E --id ID --token T", "leave the election (a leader hands over at once)",
		candidateFlags,
		func(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
			err := c.Resign(ctx, f.election, f.id, f.token)
			if err == nil {
				out.line(map[string]any{"election": f.election, "id": f.id, "resigned": true}, fmt.Sprintf("%s resigned from %s", f.id, f.election))
			}
			return err
		}},
	{"leader", "leader --election E [--local]", "print the leader and its term, or every holder with theirs (exit 1 when there is none)",
		readFlags,
		func(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
			l, err := c.Leader(f.readContext(ctx), f.election)
			if err == nil {
				out.line(l, leaderText(l))
			}
			return err
		}},
	{"election", "election --election E [--holders N] [--error-cooldown D] [--handover-delay D] [--preempt=BOOL]", "print an election and its settings; with a setting's flag, change it (scope admin)",
		electionFlags, electionCmd},
	{"candidates", "candidates --election E [--local]", "print the line of candidates",
		readFlags,
		func(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
			cs, err := c.Candidates(f.readContext(ctx), f.election)
			if err == nil {
				out.candidates(cs)
			}
			return err
		}},
	{"watch", "watch [--election E] [--last-event-id ID]", "print one line per event until interrupted",
		func(fs *pflag.FlagSet, f *clientFlags) {
			fs.StringVar(&f.lastEventID, "last-event-id", "", "resume after this event id")
		}, watchCmd},
	{"transfer", "transfer --election E --to ID [--from HOLDER] | --cancel [--token T]", "ask the leader to hand over to follower ID, or cancel the pending transfer (scope admin, or the leader's own --token)",
		func(fs *pflag.FlagSet, f *clientFlags) {
			fs.StringVar(&f.to, "to", "", "the follower that should lead")
			fs.StringVar(&f.from, "from", "", "with several holders, the holder that should hand over")
			fs.BoolVar(&f.cancel, "cancel", false, "cancel the pending transfer instead: the leader goes on leading")
			fs.StringVar(&f.token, "token", "", "the leader's own candidate token, when the leader asks (default: ask as an operator)")
		}, transferCmd},
}

// transferCmd asks for a transfer, or with --cancel cancels the pending
// one.
func transferCmd(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
	if f.cancel {
		e, err := c.CancelTransfer(ctx, f.election, f.token)
		if err == nil {
			leader := "nobody"
			if e.Leader != nil {
				leader = fmt.Sprintf("%s (term %d)", e.Leader.ID, e.Leader.Term)
			}
			out.line(e, fmt.Sprintf("transfer in %s cancelled: %s goes on leading", f.election, leader))
		}
		return err
	}
	e, err := c.TransferFrom(ctx, f.election, f.from, f.to, f.token)
	if err == nil {
		what := "the leader"
		if e.Transfer != nil && len(e.Holders) > 1 {
			what = "holder " + e.Transfer.From
		}
		out.line(e, fmt.Sprintf("transfer of %s to %s pending: %s hands over, or the target leads when its TTL runs out (elector transfer --election %s --cancel cancels it)", f.election, f.to, what, f.election))
	}
	return err
}

// candidateFlags are the flags of the commands that act as a candidate.
func candidateFlags(fs *pflag.FlagSet, f *clientFlags) {
	fs.StringVar(&f.id, "id", "", "the candidate's id")
	fs.StringVar(&f.token, "token", "", "the token campaign printed (default $"+envToken+")")
}

// newClientFlags is the flag set of the client command cc.
func newClientFlags(cc clientCommand, stderr io.Writer, f *clientFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet(cc.name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: elector %s: %s\n\nFlags:\n", cc.synopsis, cc.summary)
		fs.PrintDefaults()
	}
	gatewayFlag(fs, &f.gateway, "the gateway's URL, or its host:port")
	fs.StringVar(&f.apiToken, "api-token", "", "API token sent as Authorization: Bearer (default $"+envAPIToken+")")
	fs.StringVarP(&f.output, "output", "o", "text", "text or json")
	fs.StringVar(&f.election, "election", "", "the election")
	if cc.flags != nil {
		cc.flags(fs, f)
	}
	f.fs = fs
	return fs
}

// fromEnv fills in the flags that take their default from the
// environment and were not given. Their defaults are read only now, so
// that --help never prints a token.
func (f *clientFlags) fromEnv(fs *pflag.FlagSet, cmd string) {
	envDefault(fs, "api-token", envAPIToken, &f.apiToken)
	if cmd == "heartbeat" || cmd == "resign" {
		envDefault(fs, "token", envToken, &f.token)
	}
	if cmd == "campaign" && f.id == "" {
		f.id, _ = os.Hostname()
	}
	f.gateway = gatewayURL(f.gateway)
}

// check reports the first missing or bad flag of cmd.
func (f *clientFlags) check(cmd string) error {
	switch {
	case f.gateway == "":
		return errors.New("--gateway (or $" + envGateway + ") is required")
	case client.New(f.gateway).BaseURL() == "":
		return fmt.Errorf("--gateway %q is not an http(s) URL or a host:port such as 127.0.0.1:8080", f.gateway)
	case f.output != "text" && f.output != "json":
		return fmt.Errorf("--output %q: want text or json", f.output)
	case f.election == "" && cmd != "watch":
		return errors.New("--election is required")
	case (cmd == "heartbeat" || cmd == "resign" || cmd == "campaign") && f.id == "":
		return errors.New("--id is required")
	case cmd == "transfer" && f.to == "" && !f.cancel:
		return errors.New("--to is required: name the follower that should lead (or --cancel the pending transfer)")
	case cmd == "transfer" && f.to != "" && f.cancel:
		return errors.New("--to and --cancel exclude each other: ask for a transfer, or cancel the pending one")
	case (cmd == "heartbeat" || cmd == "resign") && f.token == "":
		return errors.New("--token (or $" + envToken + ") is required")
	}
	return nil
}

// runClient runs the client command cc. Exit codes: 0 success, 1 the
// gateway refused or could not be reached (the problem's detail is
// printed), 2 bad usage.
func runClient(ctx context.Context, cc clientCommand, args []string, stdout, stderr io.Writer) int {
	cmd := cc.name
	var f clientFlags
	fs := newClientFlags(cc, stderr, &f)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, cmd, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector %s: unexpected argument %q%s\n", cmd, fs.Arg(0), f.argumentHint(cmd, fs.Arg(0)))
		return 2
	}
	f.fromEnv(fs, cmd)
	if err := f.check(cmd); err != nil {
		fmt.Fprintf(stderr, "elector %s: %v\n", cmd, err)
		return 2
	}
	c := client.New(f.gateway, client.WithUserAgent("elector-cli/"+version), client.WithAPIToken(f.apiToken))
	out := &printer{w: stdout, json: f.output == "json"}
	if err := cc.run(ctx, c, &f, out); err != nil {
		fmt.Fprintf(stderr, "elector %s: %s\n", cmd, cliError(err, &f))
		return 1
	}
	return 0
}

// httpAdvice is the part of a problem's detail that tells an HTTP client
// which request to send ("; campaign again with POST /v1/…"), up to the
// next clause.
var httpAdvice = regexp.MustCompile(`;[^;]*\b(?:GET|POST|PUT|PATCH|DELETE) /v1/[^;]*`)

// argumentHint is what a stray argument arg most likely meant: the flag
// the command still misses, with arg as its value.
func (f *clientFlags) argumentHint(cmd, arg string) string {
	flag := ""
	switch {
	case f.election == "":
		flag = "--election"
	case cmd == "transfer" && f.to == "":
		flag = "--to"
	case (cmd == "heartbeat" || cmd == "resign" || cmd == "campaign") && f.id == "":
		flag = "--id"
	}
	if flag == "" {
		return "; flags name their values, as in --election billing"
	}
	return fmt.Sprintf("; did you mean %s %s?", flag, arg)
}

// cliError is err as a person at the command line should read it: advice
// meant for HTTP clients is replaced by the elector command or flag that
// does it, and the client's own "elector: " prefix is dropped (the command
// names itself).
func cliError(err error, f *clientFlags) string {
	msg := strings.TrimPrefix(err.Error(), "elector: ")
	var advice string
	switch {
	case errors.Is(err, client.ErrCandidateNotFound):
		advice = fmt.Sprintf("campaign again: elector campaign --election %s --id %s", f.election, f.id)
	case errors.Is(err, client.ErrElectionNotFound):
		advice = fmt.Sprintf("the first campaign creates it: elector campaign --election %s", f.election)
	case errors.Is(err, client.ErrCandidateExists):
		advice = fmt.Sprintf("resign it with its token (elector resign --election %s --id %s --token TOKEN) or wait for its TTL to run out", f.election, f.id)
	case errors.Is(err, client.ErrTokenMismatch):
		return strings.Replace(msg, "the Elector-Candidate-Token header", "--token (or $"+envToken+")", 1)
	case errors.Is(err, client.ErrNotFollower):
		advice = fmt.Sprintf("name a follower from elector candidates --election %s", f.election)
	case errors.Is(err, client.ErrNotLeader) && f.token != "":
		return strings.NewReplacer("the candidate token is", "--token is", "without a candidate token", "without --token").Replace(msg)
	case errors.Is(err, client.ErrUnauthenticated):
		return strings.Replace(msg, "send it as Authorization: Bearer <token>", "pass it with --api-token (or $"+envAPIToken+")", 1)
	default:
		return msg
	}
	return httpAdvice.ReplaceAllString(msg, "") + "; " + advice
}

func campaignCmd(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
	r := client.CampaignRequest{ID: f.id, TTL: f.ttl, Priority: f.priority}
	if f.metadata != "" {
		if !json.Valid([]byte(f.metadata)) {
			return fmt.Errorf("--metadata is not JSON")
		}
		r.Metadata = json.RawMessage(f.metadata)
	}
	st, token, err := c.Campaign(ctx, f.election, r)
	if err != nil {
		return err
	}
	out.status(st, token)
	return nil
}

// watchCmd prints events until ctx ends (SIGINT), then exits 0.
func watchCmd(ctx context.Context, c *client.Client, f *clientFlags, out *printer) error {
	events, err := c.Watch(ctx, f.election, f.lastEventID)
	if err != nil {
		return err
	}
	for ev := range events {
		out.event(ev)
	}
	return nil
}

// printer writes results as text for people or as JSON lines for scripts.
type printer struct {
	w    io.Writer
	json bool
}

// line prints v as one JSON line, or text.
func (p *printer) line(v any, text string) {
	if p.json {
		b, _ := json.Marshal(v)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintln(p.w, text)
}

// status prints a candidate's status, with its token after a campaign.
func (p *printer) status(st client.Status, token string) {
	if p.json {
		p.line(struct {
			client.Status
			Token string `json:"token,omitempty"`
		}{st, token}, "")
		return
	}
	leader := "none"
	if st.Leader != nil {
		leader = fmt.Sprintf("%s (term %d)", st.Leader.ID, st.Leader.Term)
	}
	fmt.Fprintf(p.w, "%s in %s: %s, position %d, leader %s, expires %s\n",
		st.ID, st.Election, st.State, st.Position, leader, st.ExpiresAt.Format(time.RFC3339))
	if token != "" {
		fmt.Fprintf(p.w, "token: %s\n", token)
	}
}

func (p *printer) candidates(cs client.Candidates) {
	if p.json {
		p.line(cs, "")
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POSITION\tID\tSTATE\tTERM\tEXPIRES")
	for _, c := range cs.Candidates {
		term := ""
		if c.Term > 0 {
			term = fmt.Sprint(c.Term)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Position, c.ID, c.State, term, c.ExpiresAt.Format(time.RFC3339))
	}
	_ = tw.Flush()
}

// event prints one event on one line.
func (p *printer) event(ev client.Event) {
	if p.json {
		p.line(struct {
			ID    string          `json:"id,omitempty"`
			Event json.RawMessage `json:"event"`
		}{ev.ID, ev.Raw}, "")
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s", ev.Timestamp.Format("15:04:05.000"), ev.Type)
	if s := ev.Snapshot; s != nil {
		leader := "none"
		if s.Leader != nil {
			leader = fmt.Sprintf("%s (term %d)", s.Leader.ID, s.Leader.Term)
		}
		fmt.Fprintf(&b, " election=%s leader=%s candidates=%d", s.Election, leader, len(s.Candidates))
	} else {
		d := ev.Data
		fmt.Fprintf(&b, " election=%s term=%d", d.Election, d.Term)
		if d.Candidate != nil {
			fmt.Fprintf(&b, " candidate=%s", d.Candidate.ID)
		}
		if d.Previous != nil {
			fmt.Fprintf(&b, " previous=%s/%d", d.Previous.ID, d.Previous.Term)
		}
		if d.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", d.Reason)
		}
		if d.Detail != "" {
			fmt.Fprintf(&b, " detail=%q", d.Detail)
		}
	}
	if ev.ID != "" {
		fmt.Fprintf(&b, " id=%s", ev.ID)
	}
	fmt.Fprintln(p.w, b.String())
}

// defaultGateway is where the commands that talk to a gateway find one
// when neither --gateway nor $ELECTOR_GATEWAY names it: elector serve's
// own default address.
const defaultGateway = "http://" + server.DefaultListen

// gatewayFlag defines --gateway on fs, defaulting to $ELECTOR_GATEWAY,
// else defaultGateway.
func gatewayFlag(fs *pflag.FlagSet, p *string, usage string) {
	def := os.Getenv(envGateway)
	if def == "" {
		def = defaultGateway
	}
	fs.StringVar(p, "gateway", def, usage+"; $"+envGateway+" sets the default")
}

// gatewayURL is the gateway address s as a URL: a host:port gets http://
// in front; lists separated by commas are taken element by element.
func gatewayURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p != "" && !strings.Contains(p, "://") {
			p = "http://" + p
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// envDefault sets *p from the environment variable env when the flag
// name was not given.
func envDefault(fs *pflag.FlagSet, name, env string, p *string) {
	if !fs.Changed(name) {
		*p = os.Getenv(env)
	}
}
