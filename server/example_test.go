package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/electorhq/elector/server"
)

// A gateway over the memory backend on a free loopback port, asked who
// leads an election nobody campaigns in, then stopped.
func ExampleNew() {
	cfg := server.DefaultConfig()
	cfg.Backend.Kind = "memory"
	cfg.Listen = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		fmt.Println(err)
		return
	}

	res, err := http.Get("http://" + srv.Addr().String() + "/v1/elections/billing/leader")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	fmt.Println(res.Status)

	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// 404 Not Found
	// stopped: <nil>
}
