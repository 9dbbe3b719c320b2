# shellcheck shell=bash
# shellcheck disable=SC2154  # root: set by the script that sources this file
# Sourced by scripts/setup (Helm 4) and scripts/setup-test (Helm 3.18, the charts' compatibility
# check): helm built from its Go module, pinned in scripts/versions (helm4, helm3; the wrapper
# modules scripts/tools/helm4|helm3/go.mod agree: tests/test_versions.py) and fetched
# through the Go module proxy (checked against the checksum database), once per machine into
# ~/.cache/kaos/helm-<version>/ (outside the clone, so a fresh clone reuses it), then linked.

# shellcheck source=scripts/lib/versions.sh
. "$root/scripts/lib/versions.sh"

build_helm() {  # wrapper folder under scripts/tools/, module (helm.sh/helm/v4), link
  local wrapper=$1 module=$2 link=$3 version dir flags cache=${KAOS_TOOLS_CACHE:-$HOME/.cache/kaos}
  version=$(pinned "$wrapper") || return 1
  dir="$cache/helm-$version"
  flags="-X $module/internal/version.version=$version"
  if [ "$module" = helm.sh/helm/v3 ]; then  # as Helm 3's Makefile does: the Kubernetes version `helm template`
    # assumes (else 1.20) from its client-go, v0.<minor>.x
    local minor
    minor=$(awk '$1 == "k8s.io/client-go" { split($2, v, "."); print v[2]; exit }' "$root/scripts/tools/$wrapper/go.mod")
    for package in pkg/lint/rules pkg/chartutil; do
      flags+=" -X $module/$package.k8sVersionMajor=1 -X $module/$package.k8sVersionMinor=$minor"
    done
  fi
  if [ ! -x "$dir/helm" ]; then
    command -v go >/dev/null || { echo "setup: building helm needs the go command (Go 1.25 or newer)" >&2; return 1; }
    rm -rf "$dir.partial"; mkdir -p "$dir.partial"
    (cd "$root/scripts/tools/$wrapper" && CGO_ENABLED=0 GOFLAGS=-mod=mod nice -n 10 go build -trimpath \
      -ldflags "-s -w $flags" -o "$dir.partial/helm" "$module/cmd/helm")
    rm -rf "$dir"; mv "$dir.partial" "$dir"
  fi
  mkdir -p "$(dirname "$link")"
  ln -sfn "$dir/helm" "$link"
}
