#!/usr/bin/env bash
# The Python client and its Pipecat service (clients/python): installed with pip into a virtual
# environment of its own, type-checked with mypy --strict, and tested against the real server on
# the fixture model, the Pipecat service inside a real Pipecat pipeline. About 80 s from nothing
# (half of it pip), 30 s with the environment in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="$PWD/target/python-client-venv"
if [ ! -x "$VENV/bin/python" ]; then
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    # Debian keeps venv (ensurepip) in its own package.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV"
  fi
fi
# The installs are skipped while the pins, the package's metadata and its place (the editable
# install points at this checkout) are those last installed.
stamp="$VENV/.lyre-installed"
want="$( (echo "$PWD"; cat clients/python/tests/requirements.txt clients/python/pyproject.toml) | sha256sum)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r clients/python/tests/requirements.txt
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation -e "clients/python[pipecat]"
  echo "$want" >"$stamp"
fi
"$VENV/bin/python" -m mypy --cache-dir "$VENV/mypy-cache" --config-file clients/python/pyproject.toml clients/python/src
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  -W ignore::DeprecationWarning -o faulthandler_timeout=300 clients/python/tests
