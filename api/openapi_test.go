package api

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/electorhq/elector"
)

// loadSpec parses and validates openapi.yaml.
func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(elector.OpenAPI)
	if err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not valid OpenAPI 3.0: %v", err)
	}
	return doc
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	loadSpec(t)
}

func TestOpenAPIListsEveryProblemType(t *testing.T) {
	doc := loadSpec(t)
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
