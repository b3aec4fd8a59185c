#!/usr/bin/env bash
# Reliability and security suite (docs/RELIABILITY.md): load, faults, hostile input, security.
# The 30-minute soak is separate: scripts/soak.py --minutes 30.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
cargo test --locked -p lyre-server --test hostile_input
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" python3 -m pytest -q -o faulthandler_timeout=600 tests/reliability
