// Package testnet gives tests loopback addresses for the servers and
// processes they start, and TCP proxies (Proxy) between them that a test
// can cut and heal to take a process off the network, and a server that
// never answers (Silent).
package testnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address nothing listens on now, with a port
// below the kernel's range for ephemeral ports (32768 and up on Linux): a
// process started seconds later must still find it free, and the outgoing
// connections of everything else running meanwhile (and ":0" listeners)
// are given ports from that range, never this one. A port is handed out
// once per process.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if _, taken := claimed.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	tb.Fatal("testnet: no free loopback port between 20000 and 32000")
	return ""
}

// claimed are the ports FreeAddr has handed out in this process.
var claimed sync.Map
