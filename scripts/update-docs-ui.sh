#!/usr/bin/env bash
# update-docs-ui.sh: refreshes the Swagger UI files vendored in
# api/docsui/assets from the npm package swagger-ui-dist. The Go build never
# runs npm; run this by hand to move to another version, then run the
# browser test (scripts/docs-screenshot.sh) and commit the assets.
#   scripts/update-docs-ui.sh [VERSION]     (default: the pinned one below)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version="${1:-5.35.0}"
dest=api/docsui/assets
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "swagger-ui-dist@$version" >/dev/null && tar xzf swagger-ui-dist-*.tgz)
src="$tmp/package"
cp "$src/swagger-ui-bundle.js" "$src/swagger-ui-bundle.js.LICENSE.txt" \
	"$src/favicon-32x32.png" "$src/LICENSE" "$src/NOTICE" "$dest/"
# The stylesheet without its source map comment: the map is not vendored,
# and a browser with devtools open would ask the gateway for it.
sed '/sourceMappingURL=/d' "$src/swagger-ui.css" >"$dest/swagger-ui.css"
sed -i "s/^swagger-ui-dist@[0-9.]*\$/swagger-ui-dist@$version/" api/docsui/assets/README.md
echo "vendored swagger-ui-dist@$version into $dest"
