package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/api/ui"
)

// uiCSP is the Content-Security-Policy of /ui and its assets: the page may
// load its script, style and icon, and send requests, only to the gateway
// itself; nothing inline.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiPage serves the live view. It is open even with
// Config.ProtectOperational: a browser cannot send a bearer token when it
// opens a page, and the page holds no data; everything it shows it reads
// from the API with the token entered in it.
func (a *api) uiPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	writeEmbedded(w, ui.Page(), "text/html; charset=utf-8", "no-cache", uiCSP)
}

// uiAsset serves one of the live view's embedded files. They are small and
// change with the binary: no-cache makes a browser ask again.
func (a *api) uiAsset(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "asset")
	b, ct, err := ui.Asset(name)
	if err != nil {
		a.writeError(w, r, errorf("not-found", "there is no file %q of the live view; open /ui", clip(name)))
		return
	}
	writeEmbedded(w, b, ct, "no-cache", uiCSP)
}
