package client_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests that need a gateway serve with a real `elector serve` on the
// memory backend, one process per test. The binary is ELECTOR_BINARY when
// set; otherwise, in a checkout of the repository, TestMain builds
// ../cmd/elector (through the repository's go.work). Outside a checkout
// (the module cache) those tests are skipped and the others run.
const binaryEnv = "ELECTOR_BINARY"

// electorBinary is the binary gateways run, or "" when there is none;
// noGateway then says why.
var electorBinary, noGateway string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	bin, cleanup, err := findElector()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		return 1
	}
	defer cleanup()
	electorBinary = bin
	if bin == "" {
		noGateway = "no gateway to test against: set " + binaryEnv + " to an elector binary, or run the tests in a checkout of github.com/electorhq/elector"
		fmt.Fprintln(os.Stderr, "client tests:", noGateway)
		// Examples cannot skip themselves; they print what a gateway answers.
		if f := flag.Lookup("test.skip"); f != nil && f.Value.String() == "" {
			_ = f.Value.Set("^Example")
		}
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "client tests: goroutines left running after the tests:\n\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// findElector returns the elector binary to test against and a function
// that removes what was built, or "" when there is neither ELECTOR_BINARY
// nor a checkout to build from.
func findElector() (bin string, cleanup func(), err error) {
	cleanup = func() {}
	if bin := os.Getenv(binaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", cleanup, fmt.Errorf("%s: %w", binaryEnv, err)
		}
		return bin, cleanup, nil
	}
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/electorhq/elector\n") {
		return "", cleanup, nil // not in a checkout
	}
	dir, err := os.MkdirTemp("", "elector-client-test")
	if err != nil {
		return "", cleanup, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "elector")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/elector")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", cleanup, fmt.Errorf("go build ./cmd/elector (set %s to test against a binary built elsewhere): %v\n%s", binaryEnv, err, out)
	}
	return bin, cleanup, nil
}

// gateway is one `elector serve` process.
type gateway struct {
	URL string
	cmd *exec.Cmd
}

// startGateway serves a gateway on the memory backend, on a free loopback
// port, and returns it once it is ready; it stops when stop is called.
// args are more flags of serve. For examples, which cannot skip: outside
// a checkout they are not run (see TestMain).
func startGateway(args ...string) (gw *gateway, stop func()) {
	gw, err := runGateway(startedMsg, args)
	if err != nil {
		panic(err)
	}
	return gw, gw.stop
}

// newGateway is startGateway for a test, skipped when there is no elector
// to test against.
func newGateway(t *testing.T, args ...string) *gateway {
	t.Helper()
	if electorBinary == "" {
		t.Skip(noGateway)
	}
	gw, err := runGateway(startedMsg, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.stop)
	return gw
}

// newStartingGateway is newGateway returning as soon as the gateway
// listens, before its backend has opened (the args say which backend).
func newStartingGateway(t *testing.T, args ...string) *gateway {
	t.Helper()
	if electorBinary == "" {
		t.Skip(noGateway)
	}
	gw, err := runGateway(listeningMsg, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.stop)
	return gw
}

// The log lines of serve that give its address: once it serves the API,
// and once it listens, before its backend has opened.
const (
	startedMsg   = "elector started"
	listeningMsg = "listening; opening the backend"
)

// runGateway starts the process and reads from its log the address it
// listens on once it logs the message until.
func runGateway(until string, args []string) (*gateway, error) {
	if electorBinary == "" {
		return nil, errors.New(noGateway)
	}
	args = append([]string{"serve", "--backend-kind", "memory", "--listen", "127.0.0.1:0",
		"--log-format", "json", "--sse-retry", "100ms"}, args...)
	cmd := exec.Command(electorBinary, args...)
	cmd.Dir = os.TempDir() // no elector.yaml there
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTOR_") { // only the flags configure it
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	gw := &gateway{cmd: cmd}
	started := make(chan string, 1)
	var early strings.Builder // the log until it started, for the error
	go func() {
		sc := bufio.NewScanner(logs)
		waiting := started // nil once it started; the log is read on to its end
		for sc.Scan() {
			var line struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == until && waiting != nil {
				waiting <- line.Listen
				waiting = nil
			} else if waiting != nil {
				early.Write(sc.Bytes())
				early.WriteByte('\n')
			}
		}
		if waiting != nil {
			close(waiting)
		}
	}()
	select {
	case addr, ok := <-started:
		if ok {
			gw.URL = "http://" + addr
			return gw, nil
		}
		gw.stop()
		return nil, fmt.Errorf("elector %s exited before it started:\n%s", strings.Join(args, " "), early.String())
	case <-time.After(30 * time.Second):
		gw.stop()
		return nil, fmt.Errorf("elector serve did not log %q within 30s", until)
	}
}

// stop kills the process and waits for it.
func (g *gateway) stop() {
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
}

// cuttableProxy is a reverse proxy in front of target whose connections a
// test can cut: while cut is set, every request is dropped unanswered;
// while stall is set, every new request is held unanswered until the
// client gives up on it. CloseClientConnections drops the connections it
// carries, event streams included.
type cuttableProxy struct {
	*httptest.Server
	cut, stall atomic.Bool
}

func newCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // event streams pass at once
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p := &cuttableProxy{}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cut.Load() {
			panic(http.ErrAbortHandler) // the connection is cut, no answer
		}
		if p.stall.Load() {
			<-r.Context().Done()
			return
		}
		rp.ServeHTTP(w, r)
	}))
	p.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.Start()
	t.Cleanup(func() {
		p.CloseClientConnections()
		p.Close()
	})
	return p
}

// silentAddr returns the address of a listener that accepts connections
// and never answers, as a stopped process does; it closes when the test
// ends.
func silentAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// waitUntil polls cond every 10ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leakedGoroutines returns the stacks of the goroutines still running
// code of this package, or of an HTTP connection, once they had up to
// wait to end; "" when there are none.
func leakedGoroutines(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				buf = buf[:n]
				break
			}
			buf = make([]byte, 2*len(buf))
		}
		var leaked []string
		for i, g := range strings.Split(string(buf), "\n\n") {
			if i == 0 { // this goroutine
				continue
			}
			if strings.Contains(g, "github.com/electorhq/elector/client.") || strings.Contains(g, "github.com/electorhq/elector/client_test.") ||
				strings.Contains(g, "net/http.(*persistConn)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
