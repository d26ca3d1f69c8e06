package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxHealthOutput bounds what is kept of a check's output; maxHealthReason
// bounds the reason reported to the gateway (which takes up to 1024 bytes).
const (
	maxHealthOutput = 4096
	maxHealthReason = 512
)

// healthVerdict is a change of the application's health.
type healthVerdict struct {
	healthy bool
	reason  string // why it is unhealthy: the failures and the last output
}

// healthCheck checks the candidate's own application every interval: a
// shell command (healthy when it exits 0) or an HTTP GET of url (healthy
// on a status from 200 to 399; redirects are not followed). A check that
// takes longer than timeout fails (a command's process group is killed).
// It runs beside the candidacy's heartbeats and never extends them.
type healthCheck struct {
	command  string
	url      string
	interval time.Duration
	timeout  time.Duration
	failures int // checks in a row that must fail
	env      hookEnv
	// userAgent is sent with the GET.
	userAgent string
	log       *slog.Logger
	hc        *http.Client
}

// run checks until ctx ends and offers a verdict on out when the health
// changes: healthy at the first passing check (also the very first
// check), unhealthy once failures checks in a row have failed.
func (h *healthCheck) run(ctx context.Context, out chan healthVerdict) {
	if h.url != "" {
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		h.hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	t := time.NewTicker(h.interval)
	defer t.Stop()
	healthy, failed := false, 0
	known := false
	for {
		ok, result := h.check(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case ok:
			if failed > 0 {
				h.log.LogAttrs(ctx, slog.LevelInfo, "health check passes again", slog.Int("failures", failed))
			}
			failed = 0
			if !healthy || !known {
				healthy, known = true, true
				offer(out, healthVerdict{healthy: true})
			}
		default:
			failed++
			level := slog.LevelDebug
			if failed == 1 || failed == h.failures {
				level = slog.LevelWarn
			}
			h.log.LogAttrs(ctx, level, "health check failed", slog.Int("in_a_row", failed), slog.Int("of", h.failures), slog.String("result", result))
			if failed >= h.failures && (healthy || !known) {
				healthy, known = false, true
				offer(out, healthVerdict{reason: fmt.Sprintf("health check failed %d times in a row: %s", failed, result)})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// check runs the check once. It reports whether it passed and, when it
// did not, what happened and the output, trimmed to one bounded line.
func (h *healthCheck) check(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var ok bool
	var result string
	if h.command != "" {
		ok, result = h.runCommand(ctx)
	} else {
		ok, result = h.get(ctx)
	}
	return ok, clipReason(result)
}

// runCommand runs the command in its own process group, which is killed
// when ctx ends.
func (h *healthCheck) runCommand(ctx context.Context) (bool, string) {
	var out boundedBuffer
	cmd := exec.Command("/bin/sh", "-c", h.command)
	cmd.Env = h.env.environ()
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = ownGroup(syscall.SIGKILL)
	cmd.WaitDelay = time.Second // a leftover holding the output open
	if err := cmd.Start(); err != nil {
		return false, err.Error()
	}
	stop := context.AfterFunc(ctx, func() { killGroup(cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	stop()
	output := out.String()
	var ee *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return false, joinResult(fmt.Sprintf("timed out after %s", h.timeout), output)
	case errors.As(err, &ee):
		return false, joinResult(ee.ProcessState.String(), output)
	case err != nil:
		return false, joinResult(err.Error(), output)
	}
	return true, ""
}

// get asks the URL.
func (h *healthCheck) get(ctx context.Context) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", h.userAgent)
	res, err := h.hc.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("GET %s: timed out after %s", h.url, h.timeout)
		}
		return false, err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxHealthOutput))
	if res.StatusCode >= 200 && res.StatusCode < 400 {
		return true, ""
	}
	return false, joinResult("GET "+h.url+": "+res.Status, string(body))
}

// joinResult puts what happened before the output.
func joinResult(what, output string) string {
	if output = strings.TrimSpace(output); output == "" {
		return what
	}
	return what + ": " + output
}

// clipReason makes s one line of valid UTF-8 of at most maxHealthReason
// bytes, to be logged and reported to the gateway.
func clipReason(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if len(s) <= maxHealthReason {
		return s
	}
	const more = "…"
	s = s[:maxHealthReason-len(more)]
	return strings.ToValidUTF8(s, "") + more
}

// boundedBuffer keeps the first maxHealthOutput bytes written to it and
// drops the rest; safe for the two writers of a command's output.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxHealthOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
