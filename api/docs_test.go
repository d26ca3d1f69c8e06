package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/electorhq/elector"
	"github.com/electorhq/elector/api/docsui"
)

func TestOpenAPIJSONIsTheSameDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("GET", "/openapi.json", nil).expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	fromJSON, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("loading /openapi.json: %v", err)
	}
	if err := fromJSON.Validate(context.Background()); err != nil {
		t.Fatalf("/openapi.json is not valid: %v", err)
	}
	fromYAML, err := openapi3.NewLoader().LoadFromData(elector.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(fromYAML)
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	if !reflect.DeepEqual(x, y) {
		t.Error("/openapi.json differs from openapi.yaml")
	}
}

func TestDocsPageIsServedWithItsAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("GET", "/docs", nil).expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for _, ref := range []string{`src="docs/swagger-ui-bundle.js"`, `src="docs/elector.js"`, `href="docs/swagger-ui.css"`} {
		if !bytes.Contains(r.Body, []byte(ref)) {
			t.Errorf("the page lacks %s", ref)
		}
	}
	for _, name := range docsui.Names() {
		r := e.do("GET", "/docs/"+name, nil).expect(t, http.StatusOK)
		want, ct, err := docsui.Asset(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Body, want) || r.Header.Get("Content-Type") != ct {
			t.Errorf("%s: served %d bytes as %q, want %d bytes as %q", name, len(r.Body), r.Header.Get("Content-Type"), len(want), ct)
		}
	}
}

func TestDocsAssetUnknownIsAProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	for _, name := range []string{"README.md", "index.html", "..%2Fdocsui.go", "nope.js"} {
		r := e.do("GET", "/docs/"+name, nil).expect(t, http.StatusNotFound)
		if got := r.problemType(t); got != "not-found" {
			t.Errorf("%s: problem %q", name, got)
		}
	}
}
