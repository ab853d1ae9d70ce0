#!/usr/bin/env bash
# Builds the `sleuth` binary of every commit that added a migration (each
# migration level a real release left databases at), from git history, into
# $OUT/bin/sleuth-LEVEL-COMMIT. Worktrees and one shared target dir under $OUT.
#
#   tools/upgrade-fixtures/build-old.sh [OUT]   (default /tmp/sleuth-old)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
out=${1:-/tmp/sleuth-old}
mkdir -p "$out/bin"
cd "$root"
head=$(git rev-parse HEAD)
for f in server/migrations/sqlite/*.sql; do
  commit=$(git log --diff-filter=A --format=%h -- "$f" | tail -1)
  [ -n "$commit" ] && echo "$commit"
done | uniq | while read -r commit; do
  [ "$(git rev-parse "$commit")" = "$head" ] && continue
  level=$(git ls-tree --name-only "$commit" server/migrations/sqlite/ | sort | tail -1 | sed 's|.*/\([0-9]*\)_.*|\1|')
  bin="$out/bin/sleuth-$level-$commit"
  [ -x "$bin" ] && continue
  echo "building $commit (SQLite migration level $level)" >&2
  tree="$out/tree-$commit"
  [ -d "$tree" ] || git worktree add -q --detach "$tree" "$commit"
  (cd "$tree" && CARGO_TARGET_DIR="$out/target" cargo build -q -p server --bin sleuth)
  cp "$out/target/debug/sleuth" "$bin"
  git worktree remove --force "$tree"
done
ls "$out/bin"
