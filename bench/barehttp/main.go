// Command barehttp is the floor under the fleet benchmark's HTTP ceiling
// (package bench, the etcd part of TestFleet): Go's net/http with the
// server settings elector serve has by default, and nothing else — no
// router, middleware, request id, log, metrics or backend — answering
// every request as elector answers GET /healthz. What elector's ceiling
// falls short of it is the cost of elector's own request handling; a
// target beyond it is beyond any handler served by net/http on the same
// machine.
//
//	barehttp -listen 127.0.0.1:8081
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/electorhq/elector/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "the address to serve on")
	flag.Parse()
	body := []byte(`{"status":"ok"}` + "\n")
	h := server.DefaultConfig().HTTP
	srv := &http.Server{
		Addr: *listen,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = []string{"application/json"}
			_, _ = w.Write(body)
		}),
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    server.MaxHeaderBytes,
	}
	log.Fatal(srv.ListenAndServe())
}
