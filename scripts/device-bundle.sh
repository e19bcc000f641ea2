#!/usr/bin/env bash
# Makes a build folder self-contained for a machine that has the CUDA driver but none of the
# libraries we link (Abseil, Boost.Program_options, the CUDA runtime pieces, ...).
#   scripts/device-bundle.sh BUILD_DIR
# For every ELF executable under BUILD_DIR it asks ldd which shared libraries it loads, copies
# each one that is not part of the base system into BUILD_DIR/lib, and writes BUILD_DIR/env.sh,
# which prepends that folder to LD_LIBRARY_PATH. On the other machine: `source BUILD_DIR/env.sh`.
set -euo pipefail
build=${1:?usage: scripts/device-bundle.sh BUILD_DIR}
[ -d "$build" ] || { echo "device-bundle: $build is not a folder" >&2; exit 2; }
lib="$build/lib"
mkdir -p "$lib"

# The target machine brings these itself: the loader, glibc, the C++ runtime and the driver.
# Copying them would shadow the machine's own, matched, versions.
base_system='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+\.|libgcc_s\.|libcuda\.)'

executables() {
  find "$build" -path "$lib" -prune -o -type f -perm -u+x -print |
    while IFS= read -r f; do file -b "$f" | grep -q '^ELF' && printf '%s\n' "$f"; done
}

copied=0
while IFS= read -r exe; do
  # ldd lines of interest: "libfoo.so.1 => /path/to/libfoo.so.1 (0x...)".
  while read -r soname _ path _; do
    [[ $soname =~ $base_system ]] && continue
    [[ -f ${path:-} ]] || continue
    [ -f "$lib/$soname" ] && continue
    cp -L "$path" "$lib/$soname"
    copied=$((copied + 1))
  done < <(ldd "$exe" 2>/dev/null | awk '/=>/ {print $1, $2, $3, $4}')
done < <(executables)

cat > "$build/env.sh" <<'ENV'
# Source this before running the binaries of this folder on a machine without our libraries.
export LD_LIBRARY_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ENV
echo "device-bundle: $copied libraries copied into $lib; there, run: source $build/env.sh"
du -sh "$build" | awk '{print "device-bundle: the folder is " $1}'
