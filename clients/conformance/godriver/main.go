// Command godriver is the Go client's driver of the client conformance
// suite (clients/conformance): it reads the suite's commands from standard
// input, one JSON object per line, carries them out with
// github.com/electorhq/elector/client, and writes its replies and reports
// to standard output, as clients/conformance/PROTOCOL.md says. It knows
// nothing of the scenarios. Diagnostics, the candidacies' logs among
// them, go to standard error.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

func main() {
	d := &driver{
		out:     os.Stdout,
		log:     slog.New(slog.NewTextHandler(os.Stderr, nil)),
		cands:   map[string]*candidacy{},
		streams: map[string]*stream{},
		keepers: map[string]*keeper{},
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			d.log.Error("a line that is not a command", slog.Any("err", err))
			continue
		}
		if c.Cmd == "exit" {
			d.closeAll()
			d.reply(c.Ref, struct{}{}, nil)
			os.Exit(0)
		}
		d.running.Add(1)
		go func() {
			defer d.running.Done()
			res, err := d.do(c)
			d.reply(c.Ref, res, err)
		}()
	}
	// Standard input closed: close everything, as exit does.
	d.running.Wait()
	d.closeAll()
}

// command is one line of the suite; which members are set depends on Cmd.
type command struct {
	Ref         int64             `json:"ref"`
	Cmd         string            `json:"cmd"`
	Name        string            `json:"name"`
	Lead        string            `json:"lead"`
	Gateways    []string          `json:"gateways"`
	Election    string            `json:"election"`
	Candidate   string            `json:"candidate"`
	TTLMS       float64           `json:"ttl_ms"`
	Metadata    json.RawMessage   `json:"metadata"`
	Priority    int               `json:"priority"`
	APIToken    string            `json:"api_token"`
	Reason      string            `json:"reason"`
	LastEventID string            `json:"last_event_id"`
	Op          string            `json:"op"`
	Args        callArgs          `json:"args"`
	Token       string            `json:"token"`
	Secret      string            `json:"secret"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
}

// driver carries out commands. Its maps are guarded by mu; out is
// written one whole line at a time under outMu.
type driver struct {
	outMu sync.Mutex
	out   *os.File
	log   *slog.Logger

	mu      sync.Mutex
	cands   map[string]*candidacy
	streams map[string]*stream
	keepers map[string]*keeper
	running sync.WaitGroup // commands being carried out
}

// driverError is a command the driver cannot understand or carry out.
type driverError struct{ msg string }

func (e driverError) Error() string { return e.msg }

func badCommand(format string, args ...any) error {
	return driverError{fmt.Sprintf(format, args...)}
}

// do carries out c and returns its result.
func (d *driver) do(c command) (any, error) {
	switch c.Cmd {
	case "start":
		return d.start(c)
	case "close":
		if ok, err := d.closeKeeper(c.Name); ok {
			return struct{}{}, err
		}
		return d.close(c.Name)
	case "keep_session":
		return d.keepSession(c)
	case "keeper_campaign":
		return d.keeperCampaign(c)
	case "report_error":
		return d.reportError(c)
	case "watch", "observe":
		return d.follow(c)
	case "stop":
		return d.stop(c.Name)
	case "call":
		return d.call(c)
	case "verify_webhook":
		return verifyWebhook(c)
	default:
		return nil, badCommand("unknown command %q", c.Cmd)
	}
}

// write writes v as one line of standard output.
func (d *driver) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		d.log.Error("cannot encode a line", slog.Any("err", err))
		return
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	_, _ = d.out.Write(append(b, '\n'))
}

// reply answers the command ref.
func (d *driver) reply(ref int64, result any, err error) {
	if err != nil {
		d.write(map[string]any{"ref": ref, "ok": false, "error": errorOf(err)})
		return
	}
	d.write(map[string]any{"ref": ref, "ok": true, "result": result})
}

// report writes a report of event for name, with more members.
func (d *driver) report(event, name string, members map[string]any) {
	line := map[string]any{"event": event, "name": name}
	for k, v := range members {
		line[k] = v
	}
	d.write(line)
}

// nowMS is the wall clock in milliseconds since the Unix epoch.
func nowMS() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// closeAll closes every candidacy, keeper and stream.
func (d *driver) closeAll() {
	d.mu.Lock()
	var names, keepers, streams []string
	for n := range d.cands {
		names = append(names, n)
	}
	for n := range d.keepers {
		keepers = append(keepers, n)
	}
	for n := range d.streams {
		streams = append(streams, n)
	}
	d.mu.Unlock()
	for _, n := range names {
		_, _ = d.close(n)
	}
	for _, n := range keepers {
		_, _ = d.closeKeeper(n)
	}
	for _, n := range streams {
		_, _ = d.stop(n)
	}
}
