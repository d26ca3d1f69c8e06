// Package ui holds elector's live view, /ui: one page, its scripts
// (JavaScript modules: ui.mjs imports the others), its stylesheet and its
// icon, written for this project without a framework or a build step, and
// embedded in the binary. The page loads nothing from anywhere but the
// gateway that serves it. testdata/modules.test.mjs tests the modules that
// need no browser with node; api's TestUIPageInBrowser tests the page in
// Chromium.
//
// The page lists the elections (GET /v1/elections) and follows the one
// chosen from its event stream (GET /v1/elections/{election}/events): the
// leader with its term and metadata, the candidates with their state and
// the time left before they expire, and the last events. It reads the
// stream with fetch rather than EventSource, so that it can send an API
// token; the token is asked for once, when the gateway answers 401, and
// kept in the tab's session storage. A token with the admin scope also
// gets a button per follower that transfers leadership to it.
//
// The api package serves Page at /ui and each Asset at /ui/{asset}.
package ui
