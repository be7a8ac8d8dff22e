#!/usr/bin/env bash
# The collection as users get it: build the tarball, install it (offline: the
# dependencies come from the `ansible` package already on the Python path), and
# resolve every role, module and the site playbook by FQCN from that install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cd "$ROOT"
ansible-galaxy collection build --force --output-path "$TMP/dist" . >/dev/null
tarball="$(ls "$TMP"/dist/inference-gpu_host-*.tar.gz)"
echo "built $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"
cd "$TMP"   # away from the clone and its ansible.cfg / .collections link
printf "[defaults]\ncollections_path = %s\n[inventory]\nignore_patterns = ^files$\n" "$TMP/collections" > "$TMP/ansible.cfg"
export ANSIBLE_CONFIG="$TMP/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$TMP/collections"
ansible-galaxy collection install --offline --force -p "$TMP/collections" "$tarball" >/dev/null
for role in "$ROOT"/roles/*/; do
  ansible-doc -t role "inference.gpu_host.$(basename "$role")" >/dev/null
done
for mod in "$ROOT"/plugins/modules/*.py; do
  ansible-doc "inference.gpu_host.$(basename "$mod" .py)" >/dev/null
done
ansible-playbook inference.gpu_host.site -i "$ROOT/inventories/ct129" --syntax-check >/dev/null
ansible-inventory -i "$ROOT/inventories/ct129" --graph >/dev/null
echo "installed collection: $(ls "$ROOT"/roles | wc -l) roles, $(ls "$ROOT"/plugins/modules/*.py | wc -l) modules and the site playbook resolve by FQCN"
