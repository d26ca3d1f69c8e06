package ui

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestEveryAssetIsEmbeddedWithAType(t *testing.T) {
	for _, name := range Names() {
		b, ct, err := Asset(name)
		if err != nil || len(b) == 0 || ct == "" {
			t.Errorf("%s: %d bytes, type %q, %v", name, len(b), ct, err)
		}
	}
}

// TestPageRefersOnlyToItsOwnAssets: every src and href of the page is one
// of the assets served under /ui/, so the page asks for nothing else.
func TestPageRefersOnlyToItsOwnAssets(t *testing.T) {
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllSubmatch(Page(), -1)
	if len(refs) < 3 {
		t.Fatalf("the page refers to %d files, want its script, stylesheet and icon", len(refs))
	}
	for _, m := range refs {
		ref := string(m[1])
		name, ok := strings.CutPrefix(ref, "ui/")
		if !ok || !slices.Contains(Names(), name) {
			t.Errorf("the page refers to %q, which is not one of its assets", ref)
		}
	}
}

// TestModulesImportOnlyAssets: every module the page's script imports,
// and every module they import, is served under /ui/.
func TestModulesImportOnlyAssets(t *testing.T) {
	imports := regexp.MustCompile(`(?m)^import .* from "([^"]*)";$`)
	for _, name := range Names() {
		if !strings.HasSuffix(name, ".mjs") {
			continue
		}
		b, _, err := Asset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imports.FindAllSubmatch(b, -1) {
			ref := string(m[1])
			dep, ok := strings.CutPrefix(ref, "./")
			if !ok || !slices.Contains(Names(), dep) {
				t.Errorf("%s imports %q, which is not one of the page's assets", name, ref)
			}
		}
	}
}

func TestAssetRefusesOtherFiles(t *testing.T) {
	for _, name := range []string{"index.html", "doc.go", "../ui.go", "page/ui.mjs", "x.mjs", "ui.js", "ui.mjs/", ""} {
		if _, _, err := Asset(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", name, err)
		}
	}
}
