#!/usr/bin/env bash
# Reliability and security suite (docs/RELIABILITY.md): load, faults, hostile input, security.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
cargo test --locked -p lyre-server --test hostile_input
# Only the load test is verified so far; test_faults.py, test_hostile.py and test_security.py are
# written but not yet run through (issue 6 stays open until they pass here).
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" python3 -m pytest -q tests/reliability/test_load.py
