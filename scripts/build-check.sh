#!/usr/bin/env bash
# The collection as users get it: build the tarball, install it (offline: the
# dependencies come from the `ansible` package already on the Python path), and
# resolve every role, module and the site playbook by FQCN from that install.
#   bash scripts/build-check.sh          (the dev venv's bin on PATH)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cd "$ROOT"
ansible-galaxy collection build --force --output-path "$TMP/dist" . >/dev/null
tarball="$(ls "$TMP"/dist/inference-gpu_host-*.tar.gz)"
echo "built $(basename "$tarball") ($(du -h "$tarball" | cut -f1), $(tar tzf "$tarball" | wc -l) entries)"
# A lean tarball: nothing of the repo's own testing, benchmarking or dev set-up
# ships (galaxy.yml build_ignore); every path a shipped playbook or role needs does.
banned='^(tests|molecule|benchmarks|\.config|\.ci|\.venv|\.cache|\.collections|\.hypothesis|changelogs/fragments)/'
banned+='|^(ansible\.cfg|pytest\.ini|requirements-dev\.(in|txt)|BENCHMARKS\.md|site\.yml|ct129)$'
banned+='|(^|/)(__pycache__/|[^/]*\.pyc$)|^scripts/(bootstrap|build-check|lock-vllm|role-docs|run-local|sanity|test-all)\.sh$'
shipped="$(tar tzf "$tarball" | sed 's#^\./##')"
if bad="$(grep -E "$banned" <<<"$shipped")"; then
  echo "the tarball ships what build_ignore should leave out:"; echo "$bad" | head -20; exit 1
fi
for need in README.md LICENSE meta/runtime.yml playbooks/site.yml playbooks/drift.yml \
            playbooks/files/make_tiny_models.py scripts/drift_check.py docs/README.md; do
  grep -qx "$need" <<<"$shipped" || { echo "the tarball lacks $need"; exit 1; }
done
# Role READMEs carry their variables generated from meta/argument_specs.yml (aar-doc):
# regenerate them in a copy and fail when a checked-in README is stale.
mkdir -p "$TMP/roles"; cp "$ROOT/galaxy.yml" "$TMP/galaxy.yml"   # aar-doc names roles by FQCN from it
for role in "$ROOT"/roles/*/; do
  name="$(basename "$role")"; cp -r "$role" "$TMP/roles/$name"
  aar-doc "$TMP/roles/$name" markdown >/dev/null
  if ! cmp -s "$TMP/roles/$name/README.md" "$role/README.md"; then
    echo "roles/$name/README.md is stale: run 'aar-doc roles/$name markdown' (or scripts/role-docs.sh)"
    diff -u "$role/README.md" "$TMP/roles/$name/README.md" | head -20; exit 1
  fi
done
cd "$TMP"   # away from the clone and its ansible.cfg / .collections link
printf "[defaults]\ncollections_path = %s\n[inventory]\nignore_patterns = ^files$\n" "$TMP/collections" > "$TMP/ansible.cfg"
export ANSIBLE_CONFIG="$TMP/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$TMP/collections"
ansible-galaxy collection install --offline --force -p "$TMP/collections" "$tarball" >/dev/null
for role in "$ROOT"/roles/*/; do
  ansible-doc -t role "inference.gpu_host.$(basename "$role")" >>"$TMP/docs.txt"
done
for mod in "$ROOT"/plugins/modules/*.py; do
  ansible-doc "inference.gpu_host.$(basename "$mod" .py)" >>"$TMP/docs.txt"
done
# The docs a user reads point nowhere outside the collection.
if grep -n "shared/reference\|\.\./shared" "$TMP/docs.txt"; then echo "ansible-doc points outside the collection"; exit 1; fi
ansible-playbook inference.gpu_host.site -i "$ROOT/inventories/ct129" --syntax-check >/dev/null
ansible-inventory -i "$ROOT/inventories/ct129" --graph >/dev/null
echo "installed collection: $(ls "$ROOT"/roles | wc -l) roles, $(ls "$ROOT"/plugins/modules/*.py | wc -l) modules and the site playbook resolve by FQCN"
