package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/testnet"
)

// build is one binary a benchmark builds, once per test binary.
type build struct {
	once sync.Once
	path string
	err  error
}

var built, builtBare build

// buildElector builds cmd/elector once per test binary as a release is
// built (-trimpath, -ldflags "-s -w", no cgo), or with ELECTOR_BENCH_TAGS
// as build tags and symbols kept (pprof: a profiling build, see
// TestFleet), and returns the binary's path; ELECTOR_BENCH_BINARY names a
// binary to use instead (to measure an earlier commit beside this one).
func buildElector(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("ELECTOR_BENCH_BINARY"); bin != "" {
		return bin // another build to measure, such as one of an earlier commit
	}
	return built.get(tb, "../cmd/elector", os.Getenv("ELECTOR_BENCH_TAGS"))
}

// buildBare builds bench/barehttp, the floor under elector's HTTP
// ceiling, as a release is built.
func buildBare(tb testing.TB) string {
	tb.Helper()
	return builtBare.get(tb, "./barehttp", "")
}

// get builds pkg once as a release is built, or with tags as build tags
// and symbols kept, and returns the binary's path.
func (b *build) get(tb testing.TB, pkg, tags string) string {
	tb.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "elector-bench-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(pkg))
		args := []string{"build", "-trimpath", "-o", b.path}
		if tags != "" {
			args = append(args, "-tags", tags)
		} else {
			args = append(args, "-ldflags", "-s -w")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// startBare starts bench/barehttp and waits until it answers.
func startBare(tb testing.TB) *process {
	tb.Helper()
	listen := testnet.FreeAddr(tb)
	p := startProcess(tb, tb.TempDir(), buildBare(tb), nil, "-listen", listen)
	p.URL = "http://" + listen
	p.waitHTTP(tb, p.URL+"/healthz")
	return p
}

// process is a server process a benchmark started: elector serve or etcd.
type process struct {
	URL  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  string        // where its output goes
}

// rssMiB returns the resident memory of p (VmRSS) in MiB.
func (p *process) rssMiB(tb testing.TB) float64 {
	tb.Helper()
	return rssOf(tb, p.cmd.Process.Pid)
}

// rssOf returns the resident memory of process pid in MiB.
func rssOf(tb testing.TB, pid int) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("rss: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				tb.Fatalf("rss: %q: %v", v, err)
			}
			return float64(kb) / 1024
		}
	}
	tb.Fatalf("rss: no VmRSS in /proc/%d/status", pid)
	return 0
}

// cpuOf returns the CPU time (user and system) process pid has used.
func cpuOf(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("cpu: %v", err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is the unit of /proc's CPU times (USER_HZ), 100 on Linux.
const clockTicks = 100

// kill ends p at once (SIGKILL), as a crash would, and waits for it.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop ends p with SIGTERM and waits for it (SIGKILL after 30s).
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// startProcess starts bin with args, its output in a file under dir,
// and stops it (SIGTERM) when tb ends.
func startProcess(tb testing.TB, dir, bin string, env []string, args ...string) *process {
	tb.Helper()
	p := &process{log: filepath.Join(dir, filepath.Base(bin)+".log"), done: make(chan struct{})}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	go func() { _ = p.cmd.Wait(); _ = logf.Close(); close(p.done) }()
	tb.Cleanup(p.stop)
	return p
}

// waitHTTP waits until GET url answers 200, for at most a minute; it fails
// tb if p exits first.
func (p *process) waitHTTP(tb testing.TB, url string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			ok := resp.StatusCode == http.StatusOK
			resp.Body.Close()
			if ok {
				return
			}
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(p.log)
			tb.Fatalf("%s exited before %s answered:\n%s", p.cmd.Path, url, log)
		case <-ctx.Done():
			tb.Fatalf("%s not answering after a minute", url)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serveConfig is the configuration file of a benchmark's elector serve:
// the defaults, but for where it listens and stores, and extra (YAML
// top-level keys of configs/elector.yaml).
func serveConfig(listen, dataDir, extra string) string {
	return fmt.Sprintf("listen: %s\nembedded:\n  data_dir: %s\n%s", listen, dataDir, extra)
}

// startServe starts `elector serve` of a release build with the default
// configuration but for extra (see serveConfig) and ELECTOR_BENCH_CONFIG
// (more YAML keys, to measure other settings than the defaults), the
// embedded backend in a temp dir, and waits until it is ready. ELECTOR_BENCH_PPROF, when set,
// is the address a profiling build (ELECTOR_BENCH_TAGS=pprof) serves its
// profiles on.
func startServe(tb testing.TB, extra string) *process {
	tb.Helper()
	bin := buildElector(tb)
	dir := tb.TempDir()
	listen := testnet.FreeAddr(tb)
	cfg := filepath.Join(dir, "elector.yaml")
	extra += os.Getenv("ELECTOR_BENCH_CONFIG")
	if err := os.WriteFile(cfg, []byte(serveConfig(listen, filepath.Join(dir, "data"), extra)), 0o600); err != nil {
		tb.Fatal(err)
	}
	var env []string
	if a := os.Getenv("ELECTOR_BENCH_PPROF"); a != "" {
		env = append(env, "ELECTOR_PPROF="+a)
	}
	p := startProcess(tb, dir, bin, env, "serve", "--config", cfg)
	p.URL = "http://" + listen
	p.waitHTTP(tb, p.URL+"/readyz")
	return p
}

// heapProfile saves the heap profile of a profiling build (see
// profileDuring) as <dir>/<name>.heap.pprof, after a GC.
func heapProfile(tb testing.TB, name string) {
	tb.Helper()
	dir, addr := os.Getenv("ELECTOR_BENCH_PROFILE"), os.Getenv("ELECTOR_BENCH_PPROF")
	if dir == "" || addr == "" {
		return
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		tb.Errorf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(filepath.Join(dir, name+".heap.pprof"), b, 0o644); err != nil {
		tb.Error(err)
	}
}

// profileDuring runs load and meanwhile, when ELECTOR_BENCH_PROFILE names a
// directory and the elector under load is a profiling build serving its
// profiles (ELECTOR_BENCH_TAGS=pprof, ELECTOR_BENCH_PPROF), takes a CPU
// profile of the load's length less a second and the allocations made
// meanwhile, as <dir>/<name>.cpu.pprof and <name>.allocs.pprof.
func profileDuring(tb testing.TB, name string, d time.Duration, load func()) {
	tb.Helper()
	dir, addr := os.Getenv("ELECTOR_BENCH_PROFILE"), os.Getenv("ELECTOR_BENCH_PPROF")
	if dir == "" || addr == "" {
		load()
		return
	}
	secs := max(1, int(d.Seconds())-1)
	get := func(path, file string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			tb.Errorf("profile %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			tb.Error(err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	var wg sync.WaitGroup
	wg.Go(func() { get(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), name+".cpu.pprof") })
	wg.Go(func() { get(fmt.Sprintf("/debug/pprof/allocs?seconds=%d", secs), name+".allocs.pprof") })
	load()
	wg.Wait()
}
