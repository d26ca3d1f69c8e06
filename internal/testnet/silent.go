package testnet

import (
	"net"
	"sync"
	"testing"
)

// Silent starts a listener on a free loopback port that accepts every
// connection and never reads or writes: to a client it looks as a stopped
// process or a network that drops packets does, where a request neither
// fails nor gets an answer. It returns the address ("127.0.0.1:port"); the
// listener and its connections close when the test ends.
func Silent(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testnet: silent listen: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
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
	tb.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
