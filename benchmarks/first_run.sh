#!/usr/bin/env bash
# A newcomer's first run: a fresh clone of this repository's HEAD in a temporary folder, with an
# empty pip cache, an empty npm cache, no local wheel folder (PIP_FIND_LINKS cleared) and its
# own KAOS_HOME, runs `scripts/up --detach` (set-up included) until the quickstart is Ready, then
# `kaos down`. Prints each set-up step's time and the whole. Needs the network to PyPI and npm.
# Usage: benchmarks/first_run.sh [port]   (default 18480; the clone is removed afterwards)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:-18480}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone --quiet "$root" "$work/kaos"
mkdir -p "$work/pip-cache" "$work/npm-cache" "$work/home"
cd "$work/kaos"
began=$(date +%s.%N)
env PIP_FIND_LINKS= PIP_CACHE_DIR="$work/pip-cache" npm_config_cache="$work/npm-cache" KAOS_HOME="$work/home" \
  scripts/up --detach --port "$port" > "$work/up.log" 2>&1 || { cat "$work/up.log"; exit 1; }
ended=$(date +%s.%N)
KAOS_HOME="$work/home" .venv/bin/kaos down > /dev/null
grep '^setup: .*: done in' "$work/up.log" || true
python3 -c "print(f'first run (fresh clone, empty caches) to the quickstart Ready: {$ended - $began:.1f} s')"
