#!/usr/bin/env bash
# Reliability and security suite (docs/RELIABILITY.md): load, faults, hostile input, security.
# The 30-minute soak is separate: scripts/soak.py --minutes 30.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The voice-store fault tests start throw-away PostgreSQL clusters (tests/e2e/postgres.py).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "$(dpkg-query -W -f='${Status}' postgresql 2>/dev/null)" != "install ok installed" ]; then
  echo "== installing postgresql"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
# (The Rust half, crates/lyre-server/tests/hostile_input.rs, runs with the workspace's tests.)
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" python3 -m pytest -q -o faulthandler_timeout=600 tests/reliability
