#!/usr/bin/env bash
# Keeps target/ from filling the disk: every test, bench and example binary links the
# whole dependency tree (400 MB each in a debug build), and each change of a workspace
# crate's hash (a new checkout path, a feature) leaves a full set behind. Removes the
# incremental caches and, per binary name, every executable but the newest; cargo
# relinks whatever it still needs. A fresh checkout has nothing to remove.
set -euo pipefail
cd "$(dirname "$0")/.."
for profile in target/debug target/release; do
  [ -d "$profile" ] || continue
  rm -rf "$profile/incremental"
  for dir in "$profile/deps" "$profile/examples"; do
    [ -d "$dir" ] || continue
    find "$dir" -maxdepth 1 -type f -perm -u+x ! -name '*.so' -name '*-*' -printf '%T@ %p\n' \
      | sort -rn \
      | awk '{ name = $2; sub(/-[0-9a-f]+$/, "", name); if (seen[name]++) print $2 }' \
      | xargs -r rm -f
  done
done
