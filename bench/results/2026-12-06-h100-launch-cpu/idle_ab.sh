# One request at a time, back to back, against lyre serve on 1.7B: parts (default) and one submission.
for f in .gl/*.deb; do case $f in *libgomp1_*) continue;; esac; dpkg -x "$f" /; done; ldconfig
[ -e .dev/lyre.xz ] && python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3], "wb"))' .dev/lyre.xz && chmod +x .dev/lyre
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
ls /tmp/m17/model.safetensors /tmp/site-load >/dev/null || exit 1
for first in 32 0 32 0; do
  LYRE_ENGINE_TUNING_FIRST_SUBMIT_DISPATCHES=$first LYRE_ENGINE_MAX_SESSIONS=32 LYRE_ENGINE_MAX_POSITIONS=1024 RUST_LOG=warn \
    .dev/lyre serve --model-dir /tmp/m17 --listen 127.0.0.1:18081 > $OUT/server-$first.log 2>&1 &
  pid=$!
  for _ in $(seq 120); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:18081/readyz", timeout=2)' 2>/dev/null && break; sleep 0.5; done
  echo "first_submit_dispatches=$first"
  PYTHONPATH=/tmp/site-load timeout 60 python3 scripts/ttfa_modes.py --url http://127.0.0.1:18081 --pause-s 0 --requests 10 --json $OUT/idle-$first-$RANDOM.json
  kill $pid; wait $pid 2>/dev/null
done
