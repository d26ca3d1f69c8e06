// Package docsui holds the files of elector's documentation page, /docs:
// Swagger UI (the npm package swagger-ui-dist, vendored in assets/ with its
// licence; see assets/README.md for its version and how to refresh it) and
// the small page of our own that starts it over the gateway's
// /openapi.json. Everything is embedded in the binary, and the page loads
// nothing from anywhere but the gateway that serves it.
//
// The api package serves Page at /docs and each Asset at /docs/{asset}.
package docsui
