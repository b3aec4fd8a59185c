#!/usr/bin/env bash
# Deployment: hadolint on the Dockerfile, the Kubernetes manifests validated against the Kubernetes
# API schemas (PyPI kubernetes-validate, offline) and, with the compose file, checked against the
# server, `nginx -t` on deploy/nginx/, and nginx from deploy/nginx/ in front of two `lyre serve`
# processes (streams and clips on both, SIGTERM to one mid-stream; two Base-model replicas sharing
# cloned voices through one PostgreSQL). About 70 s.
# The image itself is built and run by tests/deploy/docker_smoke.sh (too slow for CI).
set -euo pipefail
cd "$(dirname "$0")/../.."

# nginx in front of the replicas; PostgreSQL for the voices they share (a throw-away cluster).
need=()
for pkg in nginx postgresql; do
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || need+=("$pkg")
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r tests/deploy/requirements.txt
echo "== hadolint Dockerfile"
hadolint Dockerfile
[ -x target/debug/lyre ] || cargo build --locked -p lyre-server
LYRE_BIN="${LYRE_BIN:-$PWD/target/debug/lyre}" python3 -m pytest -q tests/deploy
