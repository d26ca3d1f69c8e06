package elector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// readmeBlock returns the code block (sh, go, …) of README.md that follows
// the `<!-- readme: NAME -->` marker.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: " + regexp.QuoteMeta(name) + " -->\n```[a-z]+\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no block marked <!-- readme: %s -->", name)
	}
	return string(m[1])
}

// TestREADMEInstall runs the README's install block with this checkout
// (./cmd/elector) in place of the published module, into a temporary GOBIN
// put first on PATH: the binary it installs answers `elector version`.
func TestREADMEInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	const module = "github.com/electorhq/elector/cmd/elector@latest"
	block := readmeBlock(t, "install")
	if !strings.Contains(block, "go install "+module) {
		t.Fatalf("install block does not say go install %s:\n%s", module, block)
	}
	bin := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(block, module, "./cmd/elector"))
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install block: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^elector \S+.* go1\.\d+`).Match(out) {
		t.Fatalf("install block printed %q; want elector's version line", out)
	}
	if _, err := os.Stat(filepath.Join(bin, "elector")); err != nil {
		t.Fatalf("no elector in GOBIN: %v", err)
	}
}

// goreleaser is the part of .goreleaser.yaml the project relies on.
type goreleaser struct {
	Builds []struct {
		ID      string
		Main    string
		Binary  string
		Env     []string
		Goos    []string
		Goarch  []string
		Ldflags []string
	}
	Archives []struct {
		Files []string
	}
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string
	}
	Dockers []struct {
		Goos           string
		Goarch         string
		Dockerfile     string
		ImageTemplates []string `json:"image_templates"`
	}
	DockerManifests []struct {
		NameTemplate   string   `json:"name_template"`
		ImageTemplates []string `json:"image_templates"`
	} `json:"docker_manifests"`
}

// TestReleaseConfig checks .goreleaser.yaml against the repository: a
// static elector for linux and darwin on amd64 and arm64 with the version
// linked in, archived files that exist, checksums, and an image for each
// Linux architecture under one manifest, from a Dockerfile that copies the
// built binary.
func TestReleaseConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg goreleaser
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Builds) != 1 {
		t.Fatalf("%d builds; want 1", len(cfg.Builds))
	}
	build := cfg.Builds[0]
	main, err := os.ReadFile(filepath.Join(build.Main, "main.go"))
	if err != nil || !strings.Contains(string(main), "package main") || !strings.Contains(string(main), "var version = ") {
		t.Fatalf("build main %q: no package main with var version (%v)", build.Main, err)
	}
	slices.Sort(build.Goos)
	slices.Sort(build.Goarch)
	if !slices.Equal(build.Goos, []string{"darwin", "linux"}) || !slices.Equal(build.Goarch, []string{"amd64", "arm64"}) {
		t.Fatalf("build targets %v × %v; want darwin, linux × amd64, arm64", build.Goos, build.Goarch)
	}
	if !slices.Contains(build.Env, "CGO_ENABLED=0") || !strings.Contains(strings.Join(build.Ldflags, " "), "-X main.version=") {
		t.Fatalf("build env %v, ldflags %v; want a static binary with main.version linked", build.Env, build.Ldflags)
	}
	for _, a := range cfg.Archives {
		for _, f := range a.Files {
			if m, _ := filepath.Glob(f); len(m) == 0 {
				t.Errorf("archived file %q matches nothing", f)
			}
		}
	}
	if cfg.Checksum.NameTemplate == "" || cfg.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v; want a sha256 checksums file", cfg.Checksum)
	}
	var arches, images []string
	for _, d := range cfg.Dockers {
		df, err := os.ReadFile(d.Dockerfile)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^COPY ` + regexp.QuoteMeta(build.Binary) + ` /`).Match(df) {
			t.Errorf("%s does not COPY the built %s", d.Dockerfile, build.Binary)
		}
		if d.Goos != "linux" {
			t.Errorf("image for %s; want linux", d.Goos)
		}
		arches = append(arches, d.Goarch)
		images = append(images, d.ImageTemplates...)
	}
	slices.Sort(arches)
	if !slices.Equal(arches, []string{"amd64", "arm64"}) {
		t.Errorf("images for %v; want amd64 and arm64", arches)
	}
	if len(cfg.DockerManifests) == 0 {
		t.Fatal("no docker_manifests: the image has no multi-architecture tag")
	}
	for _, m := range cfg.DockerManifests {
		for _, img := range m.ImageTemplates {
			if !slices.Contains(images, img) {
				t.Errorf("manifest %s names %s, which no docker entry builds", m.NameTemplate, img)
			}
		}
	}
}

// TestDockerignoreKeepsDataOut checks that a local data directory (the
// embedded backend's, or a cluster member's) is never sent to a build.
func TestDockerignoreKeepsDataOut(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(b), "\n"), "elector-data*/") {
		t.Fatalf(".dockerignore does not exclude elector-data*/:\n%s", b)
	}
}
