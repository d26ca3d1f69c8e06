#!/usr/bin/env bash
# tidy.sh: go mod tidy for both modules of the repository, the server's
# (go.mod) and the Go client's (client/go.mod). Run from anywhere:
#   bash scripts/tidy.sh
# go mod tidy ignores go.work, and the version of the client that go.mod
# requires may not be published yet (between releases it is the
# placeholder go.work points at ./client), so the server's module is
# tidied with a replace directive that is dropped again at once: go.mod
# must not keep one (go install …/cmd/elector@version refuses it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

client=github.com/electorhq/elector/client
go mod edit -replace="$client=./client"
trap 'go mod edit -dropreplace="$client"' EXIT
go mod tidy
(cd client && GOWORK=off go mod tidy)
