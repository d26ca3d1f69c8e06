package sidecar

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// consoleSource is roboll/elector's console backend: it reads LEADER,
// NOTLEADER and ERROR lines (any case; blank lines and lines starting with
// # are skipped) and reports them, so that the begin, end and error
// commands can be tried without a gateway. Each LEADER line is a new term.
// A LEADER line during the error timeout is ignored, as the gateway
// source would not lead then either.
type consoleSource struct {
	in           io.Reader
	id           string
	errorTimeout time.Duration
	log          *slog.Logger
	acks         chan struct{} // the reconciler has acted on the last observation

	mu         sync.Mutex
	pauseUntil time.Time // the error timeout, set by Fail
}

func newConsoleSource(in io.Reader, id string, errorTimeout time.Duration, log *slog.Logger) *consoleSource {
	return &consoleSource{in: in, id: id, errorTimeout: errorTimeout, log: log, acks: make(chan struct{}, 1)}
}

// Run reads lines until the input ends (it returns nil then) or ctx ends.
// Unlike the gateway's, the console's observations are never replaced:
// Run waits for the reconciler to act on each one (processed), so every
// line counts and a LEADER after an ERROR sees the error timeout.
//
// The goroutine reading the input stops at the next line or at the end of
// the input: a read from a terminal cannot be interrupted.
func (s *consoleSource) Run(ctx context.Context, out chan observation) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(s.in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	var term uint64
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-lines:
			if !ok {
				return nil
			}
		}
		var o observation
		switch word := strings.ToUpper(strings.TrimSpace(line)); word {
		case "", "#":
			continue
		case "LEADER":
			s.mu.Lock()
			pauseUntil := s.pauseUntil
			s.mu.Unlock()
			if time.Now().Before(pauseUntil) {
				s.log.LogAttrs(ctx, slog.LevelWarn, "LEADER ignored during the error timeout", slog.Time("until", pauseUntil))
				continue
			}
			term++
			o = observation{leading: true, term: term, leader: s.id, reason: client.ReasonElected}
		case "NOTLEADER":
			o = observation{leading: false, reason: client.ReasonLost}
		case "ERROR":
			o = observation{errored: true, reason: client.ReasonError}
		default:
			if strings.HasPrefix(word, "#") {
				continue
			}
			s.log.LogAttrs(ctx, slog.LevelWarn, "unknown console line; want LEADER, NOTLEADER or ERROR", slog.String("line", line))
			continue
		}
		select {
		case out <- o:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-s.acks:
		case <-ctx.Done():
			return nil
		}
	}
}

// processed is called by the reconciler after it acted on an observation.
func (s *consoleSource) processed() {
	select {
	case s.acks <- struct{}{}:
	default:
	}
}

// Fail starts the error timeout.
func (s *consoleSource) Fail(ctx context.Context, reason string) error {
	s.log.LogAttrs(ctx, slog.LevelInfo, "error (console: nothing to report to)", slog.String("reason", reason), slog.Duration("error_timeout", s.errorTimeout))
	s.mu.Lock()
	s.pauseUntil = time.Now().Add(s.errorTimeout)
	s.mu.Unlock()
	return nil
}

// Resign does nothing: the console has no candidacy.
func (s *consoleSource) Resign(context.Context) error { return nil }
