package elector_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/servertest"
)

// promtool returns the path of promtool, skipping the test where it is not
// installed, except in CI, which must have it (Debian package prometheus).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is needed to check deploy/prometheus and CI must install it (Debian package prometheus)")
		}
		t.Skip("promtool not installed")
	}
	return p
}

// declaredMetrics returns the names of the metrics the metrics package
// declares, read from its source.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("metrics/*.go")
	if err != nil {
		t.Fatal(err)
	}
	opts := regexp.MustCompile(`Namespace: namespace, (?:Subsystem: "(\w+)", )?Name: "(\w+)"`)
	desc := regexp.MustCompile(`namespace\+"_(\w+)"`)
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range opts.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "" {
				names["elector_"+m[1]+"_"+m[2]] = true
			} else {
				names["elector_"+m[2]] = true
			}
		}
		for _, m := range desc.FindAllStringSubmatch(string(b), -1) {
			names["elector_"+m[1]] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %v in metrics/*.go; the pattern no longer matches how metrics are declared", names)
	}
	return names
}

// checkMetricNames fails the test for each elector_* series in text that
// the metrics package does not declare (histogram suffixes aside).
func checkMetricNames(t *testing.T, what, text string, declared map[string]bool) {
	t.Helper()
	for _, name := range regexp.MustCompile(`\belector_\w+`).FindAllString(text, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && declared[b] {
				base = b
			}
		}
		if !declared[base] {
			t.Errorf("%s uses %s, which the metrics package does not declare", what, name)
		}
	}
}

// TestAlertRules checks deploy/prometheus/alerts.yaml with promtool and
// runs its unit tests (each alert fires on the series that should raise it
// and stays quiet on healthy ones), and checks that every series the rules
// use exists.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	rules, err := os.ReadFile("deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkMetricNames(t, "alerts.yaml", string(rules), declaredMetrics(t))
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = "deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// dashboard is the part of a Grafana dashboard this test reads.
type dashboard struct {
	UID        string
	Title      string
	Templating struct {
		List []struct{ Name string }
	}
	Panels []struct {
		ID         int
		Type       string
		Title      string
		Datasource *struct{ UID string }
		GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
		Targets    []struct {
			Expr  string
			RefID string `json:"refId"`
		}
	}
}

// TestGrafanaDashboard checks deploy/grafana/elector-dashboard.json: one
// data source variable used by every panel, unique panel ids, panels that
// do not overlap on the 24-column grid, every query valid PromQL (promtool
// parses each one as a recording rule, with the dashboard's variables
// filled in) and every series one that elector exports.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("deploy/grafana/elector-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Fatal("the dashboard has no uid or title")
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] {
		t.Fatal("the dashboard has no datasource variable")
	}
	declared := declaredMetrics(t)
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	fill := strings.NewReplacer(`"$job"`, `"elector"`, `"$election"`, `".*"`, "$__rate_interval", "5m")
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v is off the grid", p.Title, p.GridPos)
		}
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap", other, p.Title)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: no query on the ${datasource} variable", p.Title)
		}
		for _, q := range p.Targets {
			for _, v := range regexp.MustCompile(`\$(\w+)`).FindAllStringSubmatch(q.Expr, -1) {
				if !vars[v[1]] && !strings.HasPrefix(v[1], "__") {
					t.Errorf("panel %q uses $%s, which the dashboard does not define", p.Title, v[1])
				}
			}
			checkMetricNames(t, fmt.Sprintf("panel %q", p.Title), q.Expr, declared)
			e, _ := json.Marshal(fill.Replace(q.Expr))
			fmt.Fprintf(&rules, "      - record: panel_%d_%s\n        expr: %s\n", p.ID, strings.ToLower(q.RefID), e)
		}
	}
	tool := promtool(t)
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
	if len(ids) < 10 {
		t.Fatalf("the dashboard has %d panels; want its overview, HTTP, backend and webhook panels", len(ids))
	}
}

// TestREADMEKubernetes runs the README's Kubernetes blocks as written, with
// the elector of this checkout and a stand-in kubectl on PATH that records
// its arguments: the secret gets two fresh tokens from `elector token new`,
// and what is applied is a manifest of deploy/kubernetes. Then the smoke
// test: the stand-in reads the tokens back from what the secret was given
// and port-forwards to nothing (the gateway is one with those tokens,
// started here, which ELECTOR_GATEWAY names); the block prints the ops
// token, and campaigns and reads the leader with the clients token.
func TestREADMEKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	block := readmeBlock(t, "kubernetes")
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "elector"), "./cmd/elector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	calls := filepath.Join(t.TempDir(), "kubectl-calls")
	kubectl := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done >> ` + calls + `
echo >> ` + calls + `
case "$1" in
get) # get secret NAME -o jsonpath={.data.KEY}: the value the secret was given, base64
	key=$(printf '%s' "$5" | sed -n 's/^jsonpath={\.data\.\([a-z]*\)}$/\1/p')
	sed -n "s/^--from-literal=$key=//p" ` + calls + ` | head -n 1 | tr -d '\n' | base64 ;;
port-forward) exec sleep 60 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "ELECTOR_API_TOKEN=")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubernetes block: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	tokens := map[string]string{}
	for call := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n\n") {
		args := strings.Split(call, "\n")
		switch {
		case len(args) > 3 && args[0] == "create" && args[1] == "secret":
			for _, a := range args {
				if kv, ok := strings.CutPrefix(a, "--from-literal="); ok {
					k, v, _ := strings.Cut(kv, "=")
					tokens[k] = v
				}
			}
		case len(args) == 3 && args[0] == "apply" && args[1] == "-f":
			applied = append(applied, args[2])
		}
	}
	if len(tokens["clients"]) < 16 || len(tokens["ops"]) < 16 || tokens["clients"] == tokens["ops"] {
		t.Fatalf("the secret's tokens %q; want two distinct tokens", tokens)
	}
	if len(applied) == 0 {
		t.Fatal("the block applies nothing")
	}
	for _, f := range applied {
		if m, _ := filepath.Match("deploy/kubernetes/*.yaml", f); !m {
			t.Errorf("the block applies %s, not a manifest of deploy/kubernetes", f)
		}
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the block applies %s: %v", f, err)
		}
	}

	// The smoke test, against a gateway with the scopes the manifest gives
	// the two tokens.
	srv := servertest.Start(t, servertest.Tokens(
		api.Token{Name: "clients", SHA256: api.HashAPIToken(tokens["clients"]), Scopes: []api.Scope{api.ScopeRead, api.ScopeCampaign}, Elections: []string{"*"}},
		api.Token{Name: "ops", SHA256: api.HashAPIToken(tokens["ops"]), Scopes: []api.Scope{api.ScopeRead, api.ScopeCampaign, api.ScopeAdmin}, Elections: []string{"*"}},
	))
	smoke := exec.Command("bash", "-euo", "pipefail", "-c", readmeBlock(t, "kubernetes-smoke"))
	smoke.Env = append(env, "ELECTOR_GATEWAY="+srv.URL)
	out, err := smoke.CombinedOutput()
	if err != nil {
		t.Fatalf("kubernetes-smoke block: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[0] != tokens["ops"] ||
		!strings.HasPrefix(lines[1], "smoke-test in smoke: leader, position 0, leader smoke-test (term 1), expires ") ||
		!strings.HasPrefix(lines[2], "token: ect_") || !strings.HasPrefix(lines[3], "smoke-test (term 1, since ") {
		t.Fatalf("kubernetes-smoke block printed\n%s\nwant the ops token, the campaign and the leader as the README shows", out)
	}
}

// helm returns the path of helm, skipping the test where it is not
// installed, except in CI, which must have it (.ci/run builds it from the
// Go module proxy).
func helm(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("helm is needed to check deploy/helm and CI must install it (go install helm.sh/helm/v3/cmd/helm)")
		}
		t.Skip("helm not installed")
	}
	return p
}

// k8sDocuments returns the objects of a multi-document YAML stream by
// kind and name, as generic JSON values.
func k8sDocuments(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	for doc := range strings.SplitSeq(string(stream), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if obj == nil {
			continue
		}
		name, _ := obj["metadata"].(map[string]any)["name"].(string)
		out[obj["kind"].(string)+"/"+name] = obj
	}
	return out
}

// TestHelmChartRendersTheManifest renders deploy/helm/elector with its
// default values for a release named elector: the objects are those of
// deploy/kubernetes/embedded-cluster.yaml, field for field, so the chart
// has every check the manifest has. One member renders no cluster, and
// other counts are refused.
func TestHelmChartRendersTheManifest(t *testing.T) {
	helm := helm(t)
	render := func(args ...string) ([]byte, error) {
		return exec.Command(helm, append([]string{"template", "elector", "deploy/helm/elector"}, args...)...).Output()
	}
	out, err := render()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	manifest, err := os.ReadFile("deploy/kubernetes/embedded-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, want := k8sDocuments(t, out), k8sDocuments(t, manifest)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !reflect.DeepEqual(got[k], want[k]) {
			g, _ := json.MarshalIndent(got[k], "", "  ")
			w, _ := json.MarshalIndent(want[k], "", "  ")
			t.Errorf("the chart renders %s as\n%s\nwhere the manifest has\n%s", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the chart renders %v; the manifest has %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}

	out, err = render("--set", "members=1", "--set", "image.tag=v1.2.3")
	if err != nil {
		t.Fatalf("helm template with 1 member: %v", err)
	}
	one := k8sDocuments(t, out)
	data := one["ConfigMap/elector-cluster"].(map[string]any)["data"].(map[string]any)
	if cfg, _ := data["elector-0.yaml"].(string); len(data) != 1 || strings.Contains(cfg, "routes") || strings.Contains(cfg, "replicas") {
		t.Errorf("with 1 member the configurations are %v; want one, without a cluster", data)
	}
	if _, ok := one["PodDisruptionBudget/elector"]; ok {
		t.Error("with 1 member a PodDisruptionBudget is rendered, which would block every drain")
	}
	if !strings.Contains(string(out), "image: ghcr.io/electorhq/elector:v1.2.3") {
		t.Error("image.tag is not the image's tag")
	}
	for _, n := range []string{"2", "5"} {
		if _, err := render("--set", "members="+n); err == nil {
			t.Errorf("%s members rendered; want a refusal", n)
		}
	}
}
