package elector_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// TestREADMEKubernetes runs the README's Kubernetes block as written, with
// the elector of this checkout and a stand-in kubectl on PATH that records
// its arguments: the secret gets two fresh tokens from `elector token new`,
// and what is applied is a manifest of deploy/kubernetes.
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
	kubectl := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " + calls + "\necho >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
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
}
