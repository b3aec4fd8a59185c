#!/usr/bin/env bash
# Builds the Lyre image and runs it on the fixture model: waits for the HEALTHCHECK to turn
# healthy, synthesises over HTTP and WebSocket, checks the CPU-adapter refusal, then stops the
# container and checks it drained and exited 0. Too slow for CI (about 2 minutes with a warm
# Docker, plus 40 s the first time for the base image); run as root on a Debian 12 host:
#
#   bash tests/deploy/docker_smoke.sh            # takes target/release/lyre, else target/debug/lyre
#   LYRE_BINARY=target/debug/lyre bash tests/deploy/docker_smoke.sh
#
# Without a Docker Hub, the base image is made offline (debootstrap + docker import, tagged as
# the Dockerfile's RUNTIME_IMAGE) and the binary comes from the host (LYRE_BUILD=prebuilt). The
# test image adds Mesa's lavapipe (WITH_MESA=true) and sets LYRE_MODEL_ALLOW_CPU_ADAPTER=true,
# since this machine has no GPU; the default image has neither.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SHARED="${LYRE_SHARED:-$(cd .. && pwd)/shared}"
[ -d "$SHARED/fixtures" ] || SHARED=/work/shared
FIXTURE="$SHARED/fixtures/tiny-custom-voice"
TAG=lyre:smoke
NAME=lyre-smoke-$$
WORK=$(mktemp -d /tmp/lyre-docker-smoke.XXXXXX)
say() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (dockerd, debootstrap)"
[ -d "$FIXTURE" ] || fail "no fixture model at $FIXTURE (set LYRE_SHARED)"

need=()
for pkg in docker.io debootstrap curl; do [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || need+=("$pkg"); done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Debian's client (20.10) builds with BuildKit itself; a newer client needs the buildx plugin.
DOCKER=/usr/bin/docker
if docker buildx version >/dev/null 2>&1; then DOCKER=docker; fi
export DOCKER_BUILDKIT=1

DOCKERD_PID=
cleanup() {
  $DOCKER rm -f "$NAME" "$NAME-cpu" >/dev/null 2>&1 || true
  if [ -n "$DOCKERD_PID" ]; then kill "$DOCKERD_PID"; wait "$DOCKERD_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! $DOCKER info >/dev/null 2>&1; then
  say "starting dockerd"
  dockerd --iptables=false --ip6tables=false --bridge=none >"$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 60); do $DOCKER info >/dev/null 2>&1 && break; sleep 0.5; done
  $DOCKER info >/dev/null 2>&1 || fail "dockerd did not start: $(tail -5 "$WORK/dockerd.log")"
fi

BASE=$(sed -n 's/^ARG RUNTIME_IMAGE=//p' Dockerfile)
if ! $DOCKER image inspect "$BASE" >/dev/null 2>&1; then
  # The Debian mirror this machine's apt already uses (so none is named here).
  MIRROR=$(apt-get indextargets --format '$(URI)' 'Created-By: Packages' \
    | sed -n 's#/dists/[^/]*/main/binary-[^/]*/Packages$##p' | grep -v -- '-security' | head -1)
  [ -n "$MIRROR" ] || fail "no Debian mirror in this machine's apt sources"
  say "making $BASE offline (debootstrap --variant=minbase bookworm from $MIRROR)"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || fail "debootstrap: $(tail -5 "$WORK/debootstrap.log")"
  tar -C "$WORK/rootfs" -c . | $DOCKER import - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
fi

BINARY=${LYRE_BINARY:-}
if [ -z "$BINARY" ]; then
  if [ -x target/release/lyre ]; then BINARY=target/release/lyre; else BINARY=target/debug/lyre; fi
fi
[ -x "$BINARY" ] || cargo build --locked -p lyre-server
# The licence texts of what the binary links, as a source build makes them.
python3 scripts/licenses.py bundle target/THIRD-PARTY-LICENSES.txt >/dev/null
say "building $TAG from $BINARY"
t0=$(date +%s)
$DOCKER build --network=host -q -t "$TAG" \
  --build-arg LYRE_BUILD=prebuilt --build-arg LYRE_BINARY="$BINARY" --build-arg WITH_MESA=true . >/dev/null
mb() { $DOCKER image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }
say "built in $(( $(date +%s) - t0 )) s: $(mb "$TAG")"
say "the default image (no WITH_MESA) has no CPU Vulkan driver"
$DOCKER build --network=host -q -t lyre:smoke-default \
  --build-arg LYRE_BUILD=prebuilt --build-arg LYRE_BINARY="$BINARY" . >/dev/null
icds=$($DOCKER run --rm --entrypoint sh lyre:smoke-default -c 'ls /usr/share/vulkan/icd.d 2>/dev/null || true')
[ -z "$icds" ] || fail "the default image ships Vulkan drivers: $icds"
say "default image: $(mb lyre:smoke-default)"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
run() {  # NAME EXTRA_ARGS...
  local name=$1; shift
  $DOCKER run -d --name "$name" --network=host --stop-timeout 45 \
    -v "$FIXTURE:/models:ro" \
    -e LYRE_SERVER_LISTEN="127.0.0.1:$PORT" -e LYRE_ENGINE_MAX_SESSIONS=8 \
    -e LYRE_ENGINE_MAX_POSITIONS=512 -e LYRE_ENGINE_MAX_ROWS_PER_TICK=256 "$@" "$TAG" >/dev/null
}

say "running it without allow_cpu_adapter: it must refuse lavapipe"
run "$NAME-cpu"
for _ in $(seq 120); do
  code=$(curl -s -o "$WORK/health.json" -w '%{http_code}' "$URL/healthz" || true)
  [ "$code" = 503 ] && break; sleep 0.5
done
[ "$code" = 503 ] && grep -q "CPU adapter" "$WORK/health.json" || fail "healthz said $code: $(cat "$WORK/health.json")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 503 ] || fail "readyz is not 503 on a CPU adapter"
$DOCKER rm -f "$NAME-cpu" >/dev/null

say "running it with LYRE_MODEL_ALLOW_CPU_ADAPTER=true, waiting for the HEALTHCHECK"
t0=$(date +%s)
run "$NAME" -e LYRE_MODEL_ALLOW_CPU_ADAPTER=true
status=
for _ in $(seq 180); do
  status=$($DOCKER inspect -f '{{.State.Health.Status}}' "$NAME")
  [ "$status" = healthy ] && break
  [ "$($DOCKER inspect -f '{{.State.Running}}' "$NAME")" = true ] || break
  sleep 1
done
[ "$status" = healthy ] || fail "container is $status: $($DOCKER logs "$NAME" 2>&1 | tail -20)"
say "healthy after $(( $(date +%s) - t0 )) s"
for _ in $(seq 60); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ] && break; sleep 0.5
done
$DOCKER exec "$NAME" id -u | grep -qx 10001 || fail "the server does not run as uid 10001"
$DOCKER exec "$NAME" grep -q "GNU LESSER GENERAL PUBLIC LICENSE" /usr/share/doc/lyre/THIRD-PARTY-LICENSES.txt \
  || fail "the image lacks the third-party licence texts"
$DOCKER exec "$NAME" test -s /usr/share/doc/lyre/LICENSE || fail "the image lacks Lyre's licence"

say "synthesising through it"
curl -fsS "$URL/v1/tts" -o "$WORK/hello.wav" -D "$WORK/headers" \
  -d '{"text":"Hello world, this is a test.","voice":"vivian","language":"english","max_frames":20,"ignore_eos":true}'
head -c 4 "$WORK/hello.wav" | grep -q RIFF || fail "not a WAV file"
size=$(stat -c %s "$WORK/hello.wav")
[ "$size" = $((44 + 20 * 3840)) ] || fail "WAV of $size bytes, expected 20 frames"
grep -qi '^x-lyre-frames: 20' "$WORK/headers" || fail "X-Lyre-Frames is not 20"
python3 - "$URL" <<'PY'
import asyncio, json, sys
import websockets

async def main(url):
    async with websockets.connect(url.replace("http", "ws") + "/v1/tts/stream", subprotocols=["lyre"]) as ws:
        await ws.send(json.dumps({"type": "start", "voice": "ryan", "text": "Hello there.", "max_frames": 10,
                                  "ignore_eos": True}))
        await ws.send(json.dumps({"type": "end"}))
        frames = 0
        async for m in ws:
            if isinstance(m, bytes):
                frames += 1
            elif json.loads(m)["type"] in ("done", "error"):
                done = json.loads(m)
                break
    assert done["type"] == "done" and done["frames"] == 10 == frames, done
    print(f"== websocket: {frames} frames, ttfa {done['ttfa_ms']:.0f} ms")

asyncio.run(main(sys.argv[1]))
PY

say "docker stop: it must drain and exit 0"
$DOCKER stop "$NAME" >/dev/null
code=$($DOCKER inspect -f '{{.State.ExitCode}}' "$NAME")
$DOCKER logs "$NAME" 2>&1 | grep -q drained || fail "no 'drained' in the log"
[ "$code" = 0 ] || fail "exit code $code"
say "docker smoke test passed"
