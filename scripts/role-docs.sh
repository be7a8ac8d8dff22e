#!/usr/bin/env bash
# Regenerate the variables part of every role README from meta/argument_specs.yml
# (between the BEGIN/END_ANSIBLE_DOCS markers; prose outside them is kept).
# scripts/build-check.sh fails when a checked-in README differs from this.
#   bash scripts/role-docs.sh
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for role in "$ROOT"/roles/*/; do
  "$ROOT/.venv/bin/aar-doc" "$role" markdown
done
