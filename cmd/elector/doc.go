// Command elector runs the elector leader-election gateway.
//
//	elector serve [flags]   serve the HTTP API until SIGINT or SIGTERM
//	elector run [flags] [-- CMD ARGS]
//	                        the sidecar: campaign, heartbeat, run begin / end
//	                        commands (and supervise CMD) while leading; with
//	                        --proxy-listen, forward requests to the leader; with
//	                        --health-command or --health-url, stop leading and
//	                        leave the line while the application is unhealthy
//	elector proxy --election E --listen ADDR
//	                        forward requests to the leader, for clients that do
//	                        not campaign
//	elector campaign | heartbeat | resign | leader | candidates | watch | transfer
//	                        one request to a gateway (http://127.0.0.1:8080
//	                        unless --gateway or $ELECTOR_GATEWAY says which),
//	                        for scripts and people
//	elector bench           drive a load against gateways
//	elector healthcheck     exit 0 if the gateway's /readyz answers 2xx (the
//	                        container image's HEALTHCHECK)
//	elector token new | hash
//	                        make an API token and its sha256, or hash one
//	elector completion bash | zsh | fish
//	                        print a shell completion script
//	elector version         print the version (also elector --version)
//	elector help [COMMAND]  the commands, or one command's flags
//
// commands.go is the command table: dispatch, usage, help and completion
// are made from it.
//
// # Configuration
//
// Every setting of serve has a key in a config file, an environment
// variable and a flag. A value set by a flag wins over the environment,
// which wins over the config file, which wins over the default:
//
//	key                      environment                      flag
//	listen                   ELECTOR_LISTEN                   --listen
//	log.level                ELECTOR_LOG_LEVEL                --log-level
//	elections.default_ttl    ELECTOR_ELECTIONS_DEFAULT_TTL    --elections-default-ttl
//
// The config file is --config (or $ELECTOR_CONFIG), else ./elector.yaml if
// it exists. configs/elector.yaml lists every key with its default. Unknown
// keys in the file and values that cannot work are refused with an error
// naming the key, and serve exits with status 2. Durations need a unit
// ("10s", "1m"); only 0 may go without.
//
// # Serve
//
// serve is package server behind the command line: config.go and load.go
// map the settings onto server.Config, serve.go runs a server.Server and
// turns SIGHUP into a reload of its TLS certificate. backend.kind chooses
// the coordination backend; server/backend.go is the one place that knows
// the concrete backends.
//
// # Run and proxy
//
// run and proxy are packages internal/sidecar and internal/proxy behind
// the command line: sidecar_cmd.go and proxy_cmd.go define and check their
// flags (gatewayflags.go holds the ones they share: --gateway,
// --api-token, --log-level, --log-format) and map them onto
// sidecar.Config and proxy.Config. The hidden command __guard is
// sidecar.RunGuard, the process that stands between a sidecar and the
// command it supervises.
//
// # Shutdown
//
// On SIGINT or SIGTERM serve ends open event streams (clients reconnect,
// to another replica if there is one), stops accepting connections, waits
// at most http.shutdown_timeout for other requests, then stops webhook
// delivery, the backend loop and the backend, in the order server.Run
// documents. A second signal kills the process at once.
package main
