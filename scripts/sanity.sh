#!/usr/bin/env bash
# ansible-test sanity needs the collection at ansible_collections/<ns>/<name>:
# lay a copy out in a temporary directory and run it there.
#   bash scripts/sanity.sh [ansible-test sanity's arguments, e.g. --test pylint]
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${IGH_SANITY_DIR:-$HOME/.cache/inference.gpu_host/sanity}"  # outside any git checkout: ansible-test would honour its .gitignore
DEST="$WORK/ansible_collections/inference/gpu_host"
mkdir -p "$DEST"
# Only what git would ship (tracked + new, not ignored); not the link farm.
(cd "$ROOT" && git ls-files -co --exclude-standard | grep -v -e '^\.collections/' -e '^ct129$') > "$WORK/files.txt"
rsync -a --delete --files-from="$WORK/files.txt" "$ROOT/" "$DEST/"
# rsync --files-from does not delete stale files (or links): prune what is not listed.
(cd "$DEST" && find . \( -type f -o -type l \) ! -path './tests/output/*' | sed 's#^\./##' | sort > "$WORK/have.txt")
sort "$WORK/files.txt" | comm -23 "$WORK/have.txt" - | (cd "$DEST" && xargs -r rm -f)
cd "$DEST"
exec "$ROOT/.venv/bin/ansible-test" sanity --venv --python 3.11 --requirements "$@"
