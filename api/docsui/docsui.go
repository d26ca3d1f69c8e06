package docsui

import (
	"embed"
	"errors"
	"fmt"
	"path"
)

// files are the page and the vendored Swagger UI build. README.md is left
// out: it documents the assets, it is not one.
//
//go:embed page/index.html page/elector.js
//go:embed assets/swagger-ui-bundle.js assets/swagger-ui.css assets/favicon-32x32.png
//go:embed assets/LICENSE assets/NOTICE assets/swagger-ui-bundle.js.LICENSE.txt
var files embed.FS

// ErrNotFound is returned by Asset for a name that is not one of the page's
// assets.
var ErrNotFound = errors.New("docsui: no such asset")

// assetDirs maps each asset's name under /docs/ to its directory in files.
var assetDirs = map[string]string{
	"elector.js":                       "page",
	"swagger-ui-bundle.js":             "assets",
	"swagger-ui.css":                   "assets",
	"favicon-32x32.png":                "assets",
	"LICENSE":                          "assets",
	"NOTICE":                           "assets",
	"swagger-ui-bundle.js.LICENSE.txt": "assets",
}

// contentTypes maps a file extension to the Content-Type it is served with;
// files without an extension are plain text (the licences).
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".png": "image/png",
	".txt": "text/plain; charset=utf-8",
	"":     "text/plain; charset=utf-8",
}

// Page returns the HTML of /docs. It refers to its assets relatively, as
// docs/<name>, and to the spec as openapi.json, so it works at /docs
// behind a proxy that adds a path prefix too.
func Page() []byte {
	b, err := files.ReadFile("page/index.html")
	if err != nil { // cannot happen: the file is embedded
		panic(err)
	}
	return b
}

// Asset returns the content and Content-Type of the asset served at
// /docs/<name>, or ErrNotFound.
func Asset(name string) ([]byte, string, error) {
	dir, ok := assetDirs[name]
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	b, err := files.ReadFile(dir + "/" + name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return b, contentTypes[path.Ext(name)], nil
}

// Names lists the assets served under /docs/, for tests and the spec.
func Names() []string {
	out := make([]string, 0, len(assetDirs))
	for name := range assetDirs {
		out = append(out, name)
	}
	return out
}
