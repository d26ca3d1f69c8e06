package ui

import (
	"embed"
	"errors"
	"fmt"
	"path"
)

// files are the page and the assets it loads: ui.mjs and the modules it
// imports, the stylesheet and the icon.
//
//go:embed page/index.html page/ui.css page/icon.svg
//go:embed page/ui.mjs page/api.mjs page/events.mjs page/model.mjs page/render.mjs
var files embed.FS

// ErrNotFound is returned by Asset for a name that is not one of the page's
// assets.
var ErrNotFound = errors.New("ui: no such asset")

// contentTypes maps each asset's extension to the Content-Type it is served
// with.
var contentTypes = map[string]string{
	".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

// assets are the names served under /ui/.
var assets = []string{"ui.mjs", "api.mjs", "events.mjs", "model.mjs", "render.mjs", "ui.css", "icon.svg"}

// Page returns the HTML of /ui. It refers to its assets relatively, as
// ui/<name>, so it works at /ui behind a proxy that adds a path prefix
// too.
func Page() []byte {
	b, err := files.ReadFile("page/index.html")
	if err != nil { // cannot happen: the file is embedded
		panic(err)
	}
	return b
}

// Asset returns the content and Content-Type of the asset served at
// /ui/<name>, or ErrNotFound.
func Asset(name string) ([]byte, string, error) {
	ct, ok := contentTypes[path.Ext(name)]
	if !ok || path.Base(name) != name {
		return nil, "", fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	b, err := files.ReadFile("page/" + name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return b, ct, nil
}

// Names lists the assets served under /ui/, for tests.
func Names() []string { return append([]string(nil), assets...) }
