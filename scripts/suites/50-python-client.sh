#!/usr/bin/env bash
# The Python client and its Pipecat service (clients/python): installed with pip into a virtual
# environment of its own, type-checked with mypy --strict, and tested against the real server on
# the fixture model, the Pipecat service inside a real Pipecat pipeline. About 80 s from nothing
# (half of it pip), 30 s with the environment in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/python.sh
source scripts/lib/python.sh
VENV="$PWD/target/python-client-venv"
lyre_venv "$VENV"
install_client() {
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r clients/python/tests/requirements.txt &&
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation -e "clients/python[pipecat]"
}
# The installs are skipped while the pins, the package's metadata and its place (the editable
# install points at this checkout) are those last installed.
lyre_venv_install "$VENV" "$( (echo "$PWD"; cat clients/python/tests/requirements.txt clients/python/pyproject.toml) | sha256sum)" \
  install_client
"$VENV/bin/python" -m mypy --cache-dir "$VENV/mypy-cache" --config-file clients/python/pyproject.toml clients/python/src
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  -W ignore::DeprecationWarning -o faulthandler_timeout=300 clients/python/tests
