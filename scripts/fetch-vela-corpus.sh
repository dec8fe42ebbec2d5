#!/bin/sh
# Fetches the held-out corpus files that are not stored in this repository (their
# licence is unknown or absent, see crates/input/tests/corpus/SOURCES) into DIR, each at
# the commit it was read at, as DIR/<owner>/<repo>/<path>. Then
#   PULLCHECK_VELA_CORPUS=DIR cargo test -p pullcheck-input --test it corpus::
# reads them too. Needs network access to raw.githubusercontent.com; the tests do not.
set -eu
dir=${1:?usage: scripts/fetch-vela-corpus.sh DIR}
sources=$(dirname "$0")/../crates/input/tests/corpus/SOURCES
grep -v '^#' "$sources" | while IFS="$(printf '\t')" read -r repo path commit licence stored; do
  [ "$stored" = yes ] && continue
  mkdir -p "$dir/$repo"
  curl -fsSL --max-time 30 "https://raw.githubusercontent.com/$repo/$commit/$path" -o "$dir/$repo/$path"
  echo "fetched $repo/$path@$commit ($licence)"
done
