#!/usr/bin/env bash
# Schemathesis (PyPI) fuzzes every HTTP operation of the real server from its /openapi.json, with
# every check it has (server errors, status codes, content types, headers, response schemas,
# refused invalid data, accepted valid data, authentication, methods). The server runs the tiny
# fixture model with an API key (so the auth checks bite) and 3-frame syntheses. About 60 s.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 -m pip install -q --disable-pip-version-check schemathesis==4.32.5
[ -x target/debug/lyre ] || cargo build --locked -p lyre-server
work="$(mktemp -d)"
key="schemathesis-key-$$"
LYRE_MODEL_ALLOW_CPU_ADAPTER=true LYRE_LIMITS_MAX_FRAMES=3 LYRE_AUTH_API_KEYS="$key" \
  LYRE_ENGINE_MAX_SESSIONS=8 LYRE_ENGINE_MAX_POSITIONS=512 LYRE_VOICES_DIR="$work/voices" LYRE_LOG=warn \
  target/debug/lyre serve --model-dir "$LYRE_SHARED/fixtures/tiny-custom-voice" --listen 127.0.0.1:0 \
  2>"$work/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
url=""
for _ in $(seq 600); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/server.log" | head -1 || true)"
  [ -n "$url" ] && curl -fsS -o /dev/null "$url/readyz" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.2
done
curl -fsS -o /dev/null "$url/readyz" || { echo "the server never turned ready"; cat "$work/server.log"; exit 1; }
cd tests/schemathesis  # its schemathesis.toml
st run "$url/openapi.json" --checks all --header "Authorization: Bearer $key" \
  --max-examples 50 --request-timeout 60 --no-color
