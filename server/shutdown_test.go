package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// TestShutdownEndsStreamsWithAHintAndDrainsInFlightRequests: when Run's
// context ends, an event stream receives a retry hint and ends at once,
// while a request whose body is still arriving completes, and Run
// returns nil.
func TestShutdownEndsStreamsWithAHintAndDrainsInFlightRequests(t *testing.T) {
	gw := servertest.Start(t, servertest.Configure(func(c *server.Config) { c.API.RetryHint = 1500 * time.Millisecond }))
	addr := gw.Server.Addr().String()

	res, err := http.Get(gw.URL + "/v1/elections/billing/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	stream := bufio.NewReader(res.Body)
	if line, _ := stream.ReadString('\n'); !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream starts with %q", line)
	}

	// An in-flight campaign: headers and half the body sent. The server
	// answers Expect: 100-continue when the handler starts reading the
	// body, so the client knows the request is in flight.
	body := `{"id":"node-a","ttl":"30s"}`
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	connR := bufio.NewReader(conn)
	fmt.Fprintf(conn, "POST /v1/elections/billing/candidates HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n%s",
		addr, len(body), body[:10])
	if line, err := connR.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("no 100 Continue: %q, %v", line, err)
	}
	if line, err := connR.ReadString('\n'); err != nil || line != "\r\n" {
		t.Fatalf("after 100 Continue: %q, %v", line, err)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- gw.Stop() }()
	// The stream ends first, with the hint, while the campaign is still
	// waiting for the rest of its body.
	rest, _ := io.ReadAll(stream)
	if !strings.Contains(string(rest), "retry: 1500\n: shutting down") {
		t.Fatalf("the stream ended without the retry hint: %q", rest)
	}
	if _, err := io.WriteString(conn, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(connR, nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight campaign answered %d", resp.StatusCode)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Run after the shutdown: %v", err)
	}
}
