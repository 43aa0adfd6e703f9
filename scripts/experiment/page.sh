#!/usr/bin/env bash
# Redraws an experiment page's charts from finished run folders, without
# training again: the PNGs and table.md in DOC are replaced (charts that are
# no longer drawn are removed), and DOC/README.md's chart list (its "![...]"
# lines, written by run.sh) is rewritten to match. The rest of README.md,
# with run.sh's timing and load, is kept.
#
#   scripts/experiment/page.sh DOC RUN...
set -euo pipefail
doc=$1
shift
bin=bin/toolrl
[[ -f "$doc/README.md" ]] || { echo "page: $doc/README.md missing (run scripts/experiment/run.sh first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" plot "$@" --to "$tmp" --table "$tmp/table.md" --width 800 --height 480
if ! cmp -s "$tmp/table.md" "$doc/table.md"; then
  echo "page: $doc/table.md differs from the runs' table: these are not the runs the page was written from" >&2
  diff "$doc/table.md" "$tmp/table.md" >&2 || true
  exit 1
fi
rm -f "$doc"/*.png
cp "$tmp"/*.png "$doc"/
grep -v '^!\[' "$doc/README.md" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$tmp/README.md"
grep -v '^Charts redrawn by ' "$tmp/README.md" > "$tmp/README.body" || true
mv "$tmp/README.body" "$tmp/README.md"
{
  echo
  echo "Charts redrawn by \`scripts/experiment/page.sh\` at commit $(git rev-parse --short HEAD) on $(date -u +%Y-%m-%dT%H:%MZ) from the same run folders."
  echo
  for f in "$doc"/*.png; do
    b=$(basename "$f")
    echo "![${b%.png}]($b)"
  done
} >> "$tmp/README.md"
cp "$tmp/README.md" "$doc/README.md"
echo "page: $doc redrawn from $# runs"
