// Package elector holds what belongs to the project as a whole rather than
// to one component: the API contract.
package elector

import _ "embed"

// OpenAPI is the OpenAPI 3 description of elector's HTTP API (openapi.yaml),
// served by the API at /openapi.yaml and used by its tests to validate every
// response.
//
//go:embed openapi.yaml
var OpenAPI []byte
