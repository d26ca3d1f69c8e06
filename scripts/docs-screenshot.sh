#!/usr/bin/env bash
# docs-screenshot.sh: runs the browser tests of /docs and /ui (api's
# TestDocsPageInBrowser and TestUIPageInBrowser) and saves their
# screenshots as docs/img/docs-page.png and docs/img/ui.png, the pictures
# the README shows. It needs Debian's chromium
# (apt-get install chromium) and node; it installs the pinned
# playwright-core with npm ci.
#   scripts/docs-screenshot.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

(cd api/testdata/docs-browser && npm ci --no-audit --no-fund --loglevel=error)
mkdir -p docs/img
ELECTOR_BROWSER_TEST=1 ELECTOR_DOCS_SCREENSHOT="$PWD/docs/img/docs-page.png" \
	ELECTOR_UI_SCREENSHOT="$PWD/docs/img/ui.png" \
	go test -count=1 -run '^(TestDocsPageInBrowser|TestUIPageInBrowser)$' -v ./api
echo "wrote docs/img/docs-page.png and docs/img/ui.png"
