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

func TestAssetRefusesOtherFiles(t *testing.T) {
	for _, name := range []string{"index.html", "doc.go", "../ui.go", "page/ui.js", "x.js", "ui.js/", ""} {
		if _, _, err := Asset(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", name, err)
		}
	}
}
