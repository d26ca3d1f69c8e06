// Package server is the elector gateway process as a library: the wiring
// of one replica (backend → gateway → webhook delivery → metrics → HTTP
// API → http.Server, with TLS and its reload), its start-up and its
// shutdown order. `elector serve` is this package behind flags, the
// environment and a config file; a program can embed the same gateway.
//
// New checks a Config (DefaultConfig is what `elector serve` runs with)
// and loads the TLS certificate; Run listens, answers probes while the
// backend opens (a member of an embedded cluster waits for its peers),
// opens the backend, serves the API until its context ends, then shuts
// down: event streams end with a retry hint, requests drain, webhook
// delivery stops while it can still release its claims, the gateway's
// loop stops, and the backend closes last (Run's comment says why each
// step comes where it does). Ready and Addr tell a caller when and where
// it serves; Handler is what it serves, for another listener too.
//
// Config holds each component's own configuration (gateway.Config,
// api.Config, webhooks.Config, the backends' Config types), which own
// their defaults and checks; Validate reports every problem at once, each
// naming its field by its path in Config ("Gateway.MinTTL") with
// internal/fielderr, so that elector serve names its settings keys
// instead. Every configuration error wraps ErrConfig.
//
// Embedding a gateway over the memory backend, on a free port:
//
//	cfg := server.DefaultConfig()
//	cfg.Backend.Kind = "memory"
//	cfg.Listen = "127.0.0.1:0"
//	srv, err := server.New(cfg)
//	if err != nil {
//		return err
//	}
//	go func() { <-srv.Ready(); log.Printf("serving at %s", srv.Addr()) }()
//	return srv.Run(ctx) // until ctx ends
//
// WithBackend runs it over a backend the program opened itself; several
// servers over one backend are replicas.
package server
