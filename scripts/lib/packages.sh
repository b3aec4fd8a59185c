# Debian packages Lyre needs at run time and for its tests, and a helper that installs the
# missing ones. Sourced by scripts/serve.sh and scripts/test-all.sh; to add a package, add it to
# the list it belongs to.

# The server: the Vulkan loader, and Mesa's Vulkan drivers (lavapipe runs Vulkan on the CPU where
# there is no GPU driver; a GPU host's driver brings its own).
LYRE_RUNTIME_PACKAGES=(libvulkan1 mesa-vulkan-drivers)
# Building the server: pkg-config and libsoxr's headers (the default `soxr` feature resamples
# reference clips with libsoxr, as the official loader does; libsoxr-dev brings libsoxr0).
LYRE_BUILD_PACKAGES=(pkg-config libsoxr-dev)
# The test suite, on top of those: sox (test audio), opus-tools (opusdec and opusinfo check the
# Ogg Opus output), postgresql (the voice store's PostgreSQL tests start throw-away clusters of it).
LYRE_TEST_PACKAGES=(sox opus-tools postgresql)

# Whether dpkg has the package installed (`dpkg -s` also succeeds for one removed with its
# configuration files left behind).
lyre_has_package() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# Prints the packages among "$@" that dpkg does not have installed.
lyre_missing_packages() {
  local pkg
  for pkg in "$@"; do
    lyre_has_package "$pkg" || printf '%s\n' "$pkg"
  done
}

# Installs the packages among "$@" that are missing. Returns 1 (having said which and how to
# install them) when some are missing and this is not root on a machine with apt.
lyre_install_packages() {
  command -v dpkg >/dev/null || return 0
  local need
  mapfile -t need < <(lyre_missing_packages "$@")
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing ${need[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    return
  fi
  echo "error: missing Debian packages: ${need[*]}" >&2
  echo "       install them with: sudo apt-get install -y ${need[*]}" >&2
  return 1
}
