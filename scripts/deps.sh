#!/usr/bin/env bash
# Installs what dspark-sim needs to build, test and plot, and nothing that is already there.
# Debian 12 packages via apt-get; matplotlib via pip. Safe to run repeatedly.
#   scripts/deps.sh          everything: build, test, plot
#   scripts/deps.sh --sim    what the dspark-sim executable and the plots need (no test framework)
set -euo pipefail

pkgs=(cmake g++ make libboost-program-options-dev libabsl-dev nlohmann-json3-dev python3 python3-pip file)
[ "${1:-}" = --sim ] || pkgs+=(libgtest-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! python3 -c 'import matplotlib' 2>/dev/null; then
  echo "deps: installing matplotlib"
  python3 -m pip install -q matplotlib 2>/dev/null || python3 -m pip install -q --break-system-packages matplotlib
fi

# nvcc is optional: without it the CPU-only simulator and emulated kernels still build.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "deps: note: nvcc is at /usr/local/cuda/bin; scripts add it to PATH"
fi
