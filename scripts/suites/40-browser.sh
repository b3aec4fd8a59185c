#!/usr/bin/env bash
# The demo page at / in headless Chromium (Debian's) against the real `lyre serve` on the tiny
# fixture model, driven by playwright-core (pinned in tests/browser/package-lock.json).
set -euo pipefail
cd "$(dirname "$0")/../.."

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing chromium"
  # test-all.sh may have refreshed the lists already; refresh only if the install needs it.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  }
fi
if [ ! -x "$CHROMIUM" ]; then
  echo "error: no Chromium at $CHROMIUM (apt-get install chromium, or set CHROMIUM)" >&2
  exit 1
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "error: $tool is needed for the browser tests" >&2; exit 1; }
done

[ -x target/debug/lyre ] || cargo build --locked -q -p lyre-server
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/lyre-xdg}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

cd tests/browser
npm ci --no-audit --no-fund --loglevel=error
CHROMIUM="$CHROMIUM" node --test --test-timeout=180000 --test-concurrency=1 .
