package testnet

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on a loopback port that forwards every connection
// to a target address, for tests that cut a process off the network: Cut
// closes every connection it carries and refuses new ones until Heal.
// Its methods are safe for concurrent use.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{} // both ends of every forwarded connection
	wg    sync.WaitGroup        // the accept loop and the copiers
}

// NewProxy starts a proxy on a free loopback port forwarding to target. It
// is closed when the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testnet: proxy listen: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Cut closes every connection the proxy carries, in both directions, and
// refuses (accepts and closes at once) new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal lets new connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Conns is the number of connections the proxy carries now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// Close stops the proxy, closes every connection and waits for its
// goroutines. It is safe to call more than once.
func (p *Proxy) Close() {
	_ = p.l.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward dials the target for c and copies both ways until either side
// ends or the proxy cuts them.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut {
		_ = c.Close()
		return
	}
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut { // cut while dialling
		p.mu.Unlock()
		_ = c.Close()
		_ = t.Close()
		return
	}
	p.conns[c], p.conns[t] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src) // a reset or closed connection ends it alike
		// One direction ended: end the other too, as a dropped link would.
		_ = dst.Close()
		_ = src.Close()
	}
	wg.Add(2)
	go pipe(t, c)
	go pipe(c, t)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, t)
	p.mu.Unlock()
}
