# shellcheck shell=bash
# Sourced by the set-up scripts: a long step says what it does before it starts and how long it
# took after, so a first run on a fresh machine is never a silent wait.

step() {  # description, command...
  local what=$1 began=$SECONDS
  shift
  echo "setup: $what ..."
  "$@"
  echo "setup: $what: done in $((SECONDS - began)) s"
}

pip_install() {  # pip install arguments...: pip's downloads and progress on a terminal, quiet otherwise
  if [ -t 1 ]; then
    .venv/bin/python -m pip install --progress-bar on "$@" > >(grep --line-buffered -v '^Requirement already satisfied')
  else
    .venv/bin/python -m pip install --quiet "$@"
  fi
}

apt_install() {  # Debian package, what it is for, apt-get options...: installed with apt-get when missing (as root, or
  # with sudo that needs no password; `apt-get update` only when the package lists do not know it);
  # otherwise a warning says what to install.
  local package=$1 purpose=$2 as_root=()
  shift 2
  [ "$(id -u)" = 0 ] || as_root=(sudo -n)
  apt_get() { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y "$@" </dev/null >/dev/null; }
  if command -v apt-get >/dev/null && { [ ${#as_root[@]} = 0 ] || sudo -n true 2>/dev/null; } \
     && { apt_get install "$@" "$package" || { apt_get update && apt_get install "$@" "$package"; }; }; then
    echo "setup: installed Debian's $package"
  else
    echo "setup: WARNING: $package is missing and could not be installed here; install it" \
         "(Debian/Ubuntu: apt-get install $package) for $purpose" >&2
  fi
}
