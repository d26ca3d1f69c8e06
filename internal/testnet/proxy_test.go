package testnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echo starts a loopback server that writes back every line it reads.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends a line over c and returns what comes back, or the error.
func roundTrip(c net.Conn, line string) (string, error) {
	// A bound on a test that fails, not a wait: the answer is immediate.
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return got, err
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestProxyForwardsCutsAndHeals(t *testing.T) {
	p := NewProxy(t, echo(t))
	before := dial(t, p.Addr())
	if got, err := roundTrip(before, "one"); err != nil || got != "one\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	if n := p.Conns(); n != 1 {
		t.Fatalf("%d connections carried, want 1", n)
	}

	p.Cut()
	if got, err := roundTrip(before, "two"); err == nil {
		t.Fatalf("a connection carried before the cut still answers %q", got)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection carried before the cut hangs instead of ending: %v", err)
	}
	during := dial(t, p.Addr()) // accepted, then closed at once
	if got, err := roundTrip(during, "three"); err == nil {
		t.Fatalf("a connection made during the cut answers %q", got)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection made during the cut hangs instead of being refused: %v", err)
	}

	p.Heal()
	after := dial(t, p.Addr())
	if got, err := roundTrip(after, "four"); err != nil || got != "four\n" {
		t.Fatalf("after healing: %q, %v", got, err)
	}
}

func TestProxyCloseEndsEverything(t *testing.T) {
	p := NewProxy(t, echo(t))
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, "x"); err != nil {
		t.Fatal(err)
	}
	p.Close() // returns only once every goroutine of the proxy is done
	if n := p.Conns(); n != 0 {
		t.Fatalf("%d connections left after Close", n)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("the proxy still accepts after Close")
	}
	p.Close() // twice is fine
}

func TestSilentAcceptsAndNeverAnswers(t *testing.T) {
	c, err := net.Dial("tcp", Silent(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %d bytes, err %v: want a timeout with nothing read", n, err)
	}
}
