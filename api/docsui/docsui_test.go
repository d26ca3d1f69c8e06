package docsui

import (
	"errors"
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
	if !strings.Contains(string(Page()), `id="swagger-ui"`) {
		t.Error("the page has no Swagger UI container")
	}
}

func TestAssetRefusesOtherFiles(t *testing.T) {
	for _, name := range []string{"README.md", "index.html", "../docsui.go", "page/elector.js", ""} {
		if _, _, err := Asset(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", name, err)
		}
	}
}
