package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/electorhq/elector"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	if _, err := spec(); err != nil {
		t.Fatalf("openapi.yaml is not valid OpenAPI 3.1: %v", err)
	}
}

func TestOpenAPIListsEveryProblemType(t *testing.T) {
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	var inSpec []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["type"].Value.Enum {
		inSpec = append(inSpec, strings.TrimPrefix(v.(string), ProblemTypePrefix))
	}
	slices.Sort(inSpec)
	var inCode []string
	for slug := range problemKinds {
		inCode = append(inCode, slug)
	}
	slices.Sort(inCode)
	if !slices.Equal(inSpec, inCode) {
		t.Errorf("problem types differ:\nopenapi.yaml %v\nproblem.go   %v", inSpec, inCode)
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	r := e.do("GET", "/openapi.yaml", nil).expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q", ct)
	}
	if string(r.Body) != string(elector.OpenAPI) {
		t.Error("served document differs from openapi.yaml")
	}
}
