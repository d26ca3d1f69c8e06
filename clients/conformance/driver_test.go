package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// driver is how to start one client's driver.
type driver struct {
	name string   // go, python, typescript: the name of its subtest
	argv []string // the command, run in the repository's root
	// missing says why the driver cannot run here ("" when it can).
	missing string
}

// drivers are the clients' drivers, as PROTOCOL.md names them. root is
// the repository's root, godriver the Go driver's binary.
func drivers(root, godriver string) []driver {
	python := "/usr/bin/python3" // Debian's
	if _, err := os.Stat(python); err != nil {
		python, _ = exec.LookPath("python3")
	}
	node, _ := exec.LookPath("node")
	ds := []driver{
		{name: "go", argv: []string{godriver}},
		{name: "python", argv: []string{python, "clients/python/conformance_driver.py"}},
		{name: "typescript", argv: []string{node, "clients/typescript/dist/conformance-driver.js"}},
	}
	for i, d := range ds {
		switch {
		case d.argv[0] == "":
			ds[i].missing = "its runtime is not installed (" + map[string]string{"python": "python3", "typescript": "node"}[d.name] + ")"
		case len(d.argv) > 1:
			if _, err := os.Stat(filepath.Join(root, d.argv[1])); err != nil {
				ds[i].missing = d.argv[1] + " does not exist"
				if d.name == "typescript" {
					ds[i].missing += " (build it: cd clients/typescript && npm ci && npm run build)"
				}
			}
		}
	}
	return ds
}

// requireEnv names the drivers that must run: a comma-separated list such
// as "go,python,typescript". A driver it names fails where it would be
// skipped.
const requireEnv = "ELECTOR_CONFORMANCE_REQUIRE"

// reply is the driver's answer to one command.
type reply struct {
	Ref    int64           `json:"ref"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *replyError     `json:"error"`
}

// replyError is a failed command's error.
type replyError struct {
	Kind    string `json:"kind"` // problem, transport or driver
	Type    string `json:"type"`
	Status  int    `json:"status"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

func (e *replyError) Error() string {
	if e.Kind == "problem" {
		return fmt.Sprintf("%s: %s %d (%s): %s", e.Kind, e.Type, e.Status, e.Class, e.Message)
	}
	return e.Kind + ": " + e.Message
}

// report is a line the driver writes as things happen.
type report struct {
	Event     string  `json:"event"` // leading, stopped, campaigned, observed, leader, session_ended, log
	Name      string  `json:"name"`
	Term      uint64  `json:"term"`
	Reason    string  `json:"reason"`
	AtMS      float64 `json:"at_ms"`
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Candidate string  `json:"candidate"`
	Leader    string  `json:"leader"`
	Message   string  `json:"message"`
	// Error is why a keeper ended (session_ended).
	Error *replyError `json:"error"`
}

// At is when the report's thing happened.
func (r report) At() time.Time { return time.UnixMicro(int64(r.AtMS * 1000)) }

func (r report) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// proc is a running driver.
type proc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	nextRef int64
	pending map[int64]chan reply
	reports []report
	changed chan struct{} // closed and replaced when a report comes
	exited  chan struct{} // closed when standard output ended
	readers sync.WaitGroup
}

// startDriver starts d in root; it exits (told to) when the test ends.
func startDriver(t *testing.T, d driver, root string) *proc {
	t.Helper()
	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Dir = root
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the %s driver: %v", d.name, err)
	}
	p := &proc{t: t, name: d.name, cmd: cmd, stdin: stdin, pending: map[int64]chan reply{},
		changed: make(chan struct{}), exited: make(chan struct{})}
	p.readers.Add(2)
	go p.readStdout(stdout)
	go p.readStderr(stderr)
	t.Cleanup(p.exit)
	return p
}

// readStdout dispatches replies and keeps reports.
func (p *proc) readStdout(r io.Reader) {
	defer p.readers.Done()
	defer close(p.exited)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var probe struct {
			Ref   *int64 `json:"ref"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &probe); err != nil || (probe.Ref == nil) == (probe.Event == "") {
			p.t.Errorf("%s driver wrote a line that is neither a reply nor a report: %s", p.name, line)
			continue
		}
		if probe.Ref != nil {
			var rep reply
			if err := json.Unmarshal(line, &rep); err != nil {
				p.t.Errorf("%s driver: reply %s: %v", p.name, line, err)
				continue
			}
			p.mu.Lock()
			ch := p.pending[rep.Ref]
			delete(p.pending, rep.Ref)
			p.mu.Unlock()
			if ch == nil {
				p.t.Errorf("%s driver: a reply to no command, or a second one: %s", p.name, line)
				continue
			}
			ch <- rep
			continue
		}
		var rep report
		if err := json.Unmarshal(line, &rep); err != nil {
			p.t.Errorf("%s driver: report %s: %v", p.name, line, err)
			continue
		}
		if rep.Event == "log" {
			p.t.Logf("%s driver: %s", p.name, rep.Message)
		}
		p.mu.Lock()
		p.reports = append(p.reports, rep)
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
}

// readStderr copies the driver's diagnostics into the test log.
func (p *proc) readStderr(r io.Reader) {
	defer p.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.t.Logf("%s driver stderr: %s", p.name, sc.Text())
	}
}

// send writes cmd with a fresh ref and returns where its reply comes.
func (p *proc) send(cmd map[string]any) (chan reply, error) {
	ch := make(chan reply, 1)
	p.mu.Lock()
	p.nextRef++
	ref := p.nextRef
	p.pending[ref] = ch
	p.mu.Unlock()
	line := map[string]any{"ref": ref}
	for k, v := range cmd {
		line[k] = v
	}
	b, err := json.Marshal(line)
	if err != nil {
		return nil, err
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return ch, err
}

// do sends cmd and waits for its reply: the result, or the error the
// driver answered with. The test fails when no reply comes in time.
func (p *proc) do(cmd map[string]any) (json.RawMessage, *replyError) {
	p.t.Helper()
	ch, err := p.send(cmd)
	if err != nil {
		p.t.Fatalf("%s driver: send %v: %v", p.name, cmd, err)
	}
	select {
	case rep := <-ch:
		if !rep.OK {
			if rep.Error == nil {
				p.t.Fatalf("%s driver: %v failed without an error member", p.name, cmd)
			}
			return nil, rep.Error
		}
		return rep.Result, nil
	case <-p.exited:
		p.t.Fatalf("%s driver exited before it answered %v", p.name, cmd)
	case <-time.After(waitLimit):
		p.t.Fatalf("%s driver: no answer to %v within %s", p.name, cmd, waitLimit)
	}
	return nil, nil
}

// must is do for a command that must succeed; it decodes the result into
// out when out is not nil.
func (p *proc) must(cmd map[string]any, out any) {
	p.t.Helper()
	res, err := p.do(cmd)
	if err != nil {
		p.t.Fatalf("%s driver: %v: %v", p.name, cmd, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			p.t.Fatalf("%s driver: result of %v: %s: %v", p.name, cmd, res, err)
		}
	}
}

// Reports returns the reports so far, in the order they came.
func (p *proc) Reports() []report {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]report(nil), p.reports...)
}

// await waits until a report matches and returns the first that does,
// failing the test (with every report so far) after waitLimit.
func (p *proc) await(what string, match func(report) bool) report {
	p.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, r := range p.reports {
			if match(r) {
				p.mu.Unlock()
				return r
			}
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-p.exited:
			p.t.Fatalf("%s driver exited while the suite waited for %s; its reports:\n%s", p.name, what, p.dump())
		case <-deadline.C:
			p.t.Fatalf("%s driver: no report of %s within %s; its reports:\n%s", p.name, what, waitLimit, p.dump())
		}
	}
}

// dump lists the reports, one a line.
func (p *proc) dump() string {
	var b strings.Builder
	for _, r := range p.Reports() {
		b.WriteString("\t" + r.String() + "\n")
	}
	return b.String()
}

// exit tells the driver to exit, kills it if it has not within
// waitLimit, and checks the order of its leadership reports.
func (p *proc) exit() {
	exited := make(chan error, 1)
	go func() {
		p.readers.Wait()
		exited <- p.cmd.Wait()
	}()
	ch, _ := p.send(map[string]any{"cmd": "exit"}) // a driver that is gone already fails below
	_ = p.stdin.Close()
	clean := false
	select {
	case err := <-exited:
		if err != nil {
			p.t.Errorf("%s driver exited: %v; want 0", p.name, err)
		}
		select {
		case <-ch:
			clean = err == nil
		default:
			p.t.Errorf("%s driver exited without answering exit", p.name)
		}
	case <-time.After(waitLimit):
		p.t.Errorf("%s driver did not exit within %s of being told", p.name, waitLimit)
		_ = p.cmd.Process.Kill()
		<-exited
	}
	checkSignals(p.t, p.name, p.Reports(), clean)
}

// checkSignals checks what PROTOCOL.md promises of leadership reports:
// per name, every leading is followed by exactly one stopped of the same
// term, no earlier than it, before the next leading; after a clean exit
// (which closes every candidacy) none is left leading.
func checkSignals(t *testing.T, driver string, reports []report, exited bool) {
	t.Helper()
	leading := map[string]*report{}
	for i, r := range reports {
		switch r.Event {
		case "leading":
			if l := leading[r.Name]; l != nil {
				t.Errorf("%s driver: %s leading again (term %d) before its term %d stopped", driver, r.Name, r.Term, l.Term)
			}
			leading[r.Name] = &reports[i]
		case "stopped":
			l := leading[r.Name]
			switch {
			case l == nil:
				t.Errorf("%s driver: %s stopped (term %d) without leading", driver, r.Name, r.Term)
			case l.Term != r.Term || r.AtMS < l.AtMS:
				t.Errorf("%s driver: %s stopped %v after leading %v", driver, r.Name, r, *l)
			}
			leading[r.Name] = nil
		}
	}
	for name, l := range leading {
		if l != nil && exited {
			t.Errorf("%s driver exited with %s leading (term %d) and no stopped report", driver, name, l.Term)
		}
	}
}
