#!/usr/bin/env bash
# check-deploy.sh: the checks of what surrounds the binary that go test
# does not run. Run from anywhere:
#   bash scripts/check-deploy.sh
# It needs Go, node and npm (installed with apt-get when missing) and the
# npm registry and the Go module proxy for the pinned packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

node_deps=()
command -v node >/dev/null 2>&1 || node_deps+=(nodejs)
command -v npm >/dev/null 2>&1 || node_deps+=(npm)
if ((${#node_deps[@]} > 0)); then
	echo "== installing ${node_deps[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null
	apt-get install -y -qq "${node_deps[@]}" </dev/null >/dev/null
fi

# The Kubernetes manifests against the API schemas, offline: the
# kubernetes-models package (pinned in deploy/testdata/k8s-validate).
echo "== deploy/kubernetes validated by kubernetes-models"
(cd deploy/testdata/k8s-validate && npm ci --no-audit --no-fund --loglevel=error && node validate.mjs ../../kubernetes/*.yaml)

# And strictly, into the API's Go types: unknown (misspelt) fields fail.
echo "== deploy/kubernetes decoded strictly into k8s.io/api types"
# (A module of its own, outside the repository's go.work.)
(cd deploy/testdata/k8s-strict && GOWORK=off go run . ../../kubernetes/*.yaml)

# The Helm chart: helm's own lint, then what it renders through the two
# checks above (.ci/run installs helm; TestHelmChartRendersTheManifest
# checks that the defaults render embedded-cluster.yaml).
echo "== deploy/helm linted by helm, rendered and validated as the manifests"
export PATH="$(go env GOPATH)/bin:$PATH"
command -v helm >/dev/null 2>&1 || go install helm.sh/helm/v3/cmd/helm@v3.22.0 # as .ci/run
rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT
helm lint --strict deploy/helm/elector
helm template elector deploy/helm/elector > "$rendered/default.yaml"
helm template elector deploy/helm/elector --set members=1 > "$rendered/single.yaml"
(cd deploy/testdata/k8s-validate && node validate.mjs "$rendered"/*.yaml)
(cd deploy/testdata/k8s-strict && GOWORK=off go run . "$rendered"/*.yaml)

# The Compose files, loaded as `docker compose config` loads them (schema,
# interpolation, consistency) by compose-go, the Compose Specification's
# reference library that docker compose is built on (pinned in
# deploy/testdata/compose-check): no Docker engine needed.
echo "== deploy/compose validated by compose-go"
(cd deploy/testdata/compose-check && GOWORK=off go run . ../../compose/*.yaml)

# The serverless receivers of examples/ against deliveries captured from a
# real gateway: the README's serverless block, run as written.
echo "== examples/ receivers against a real gateway's deliveries (README block)"
serverless="$(awk '/^<!-- readme: serverless -->$/ {f = 1; next} f && /^```sh$/ {g = 1; next} g && /^```$/ {exit} g' README.md)"
if [[ -z "$serverless" ]]; then
	echo "README.md has no serverless block" >&2
	exit 1
fi
bash -euo pipefail -c "$serverless"
