package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"sigs.k8s.io/yaml"

	"github.com/electorhq/elector"
	"github.com/electorhq/elector/api/docsui"
)

// docsCSP is the Content-Security-Policy of /docs and its assets: the page
// may load scripts, styles and data only from the gateway itself (Swagger
// UI styles elements inline, and draws some icons as data: images).
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// openapiJSON is openapi.yaml converted to JSON, once, on first use.
var openapiJSON = sync.OnceValues(func() ([]byte, error) {
	return yaml.YAMLToJSON(elector.OpenAPI)
})

// openapiAsJSON serves the API's OpenAPI document as JSON: the same
// document as /openapi.yaml, for tools that read only JSON.
func (a *api) openapiAsJSON(w http.ResponseWriter, r *http.Request) {
	b, err := openapiJSON()
	if err != nil || !json.Valid(b) {
		a.writeError(w, r, errors.Join(errors.New("api: openapi.yaml to JSON"), err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}

// root sends a browser pointed at the gateway to its documentation page.
func (a *api) root(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/docs", http.StatusFound)
}

// docs serves the documentation page, Swagger UI over /openapi.json (its
// headers alone for HEAD: the server drops the body).
func (a *api) docs(w http.ResponseWriter, r *http.Request) {
	writeEmbedded(w, docsui.Page(), "text/html; charset=utf-8", "no-cache", docsCSP)
}

// docsAsset serves one of the documentation page's embedded files.
func (a *api) docsAsset(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "asset")
	b, ct, err := docsui.Asset(name)
	if err != nil {
		a.writeError(w, r, errorf("not-found", "there is no file %q of the documentation page; open /docs", clip(name)))
		return
	}
	writeEmbedded(w, b, ct, "public, max-age=3600", docsCSP)
}

// writeEmbedded answers with one of the binary's embedded files (a page or
// an asset of /docs or /ui), under its content security policy.
func writeEmbedded(w http.ResponseWriter, b []byte, contentType, cacheControl, csp string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}
