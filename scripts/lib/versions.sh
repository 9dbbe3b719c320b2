# shellcheck shell=bash
# shellcheck disable=SC2154  # root: set by the script that sources this file
# Reads the one pin table, scripts/versions (name=version lines).

pinned() {  # name: its version in scripts/versions, or fails saying so
  awk -v n="$1" '{ split($1, kv, "=") } kv[1] == n && kv[2] ~ /^v[0-9]/ { print kv[2]; found = 1; exit }
    END { exit !found }' "$root/scripts/versions" \
    || { echo "${0##*/}: no version of $1 in scripts/versions" >&2; return 1; }
}
