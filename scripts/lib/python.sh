# Python virtual environments for the test suites that need one (sourced by them; each keeps
# its environment under target/).
# shellcheck source=scripts/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/packages.sh"

# lyre_venv DIR: a virtual environment at DIR, made unless there is one. Debian keeps venv
# (ensurepip) in python3-venv, installed when the first try fails.
lyre_venv() {
  [ -x "$1/bin/python" ] && return 0
  python3 -m venv "$1" 2>/dev/null && return 0
  rm -rf "$1"
  lyre_install_packages python3-venv || return 1
  python3 -m venv "$1"
}

# lyre_venv_install DIR STAMP COMMAND...: runs COMMAND (the installs into DIR) unless it last
# ran for the same STAMP (a digest of what the installs depend on), then records STAMP.
lyre_venv_install() {
  local dir=$1 stamp=$2
  shift 2
  [ "$(cat "$dir/.lyre-installed" 2>/dev/null)" = "$stamp" ] && return 0
  "$@" || return 1
  echo "$stamp" >"$dir/.lyre-installed"
}
