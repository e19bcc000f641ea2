#!/usr/bin/env bash
# scripts/new-impl.sh NAME: scaffold a working implementation of the builder suite in
# kernels/impls/<NAME with '-' as '_'>.cu from kernels/impls/TEMPLATE.cu.in. After a rebuild,
# `dspark-sim verify --impl NAME`, `run --impl NAME` and `bench --impl NAME` know it; no other
# file changes. NAME: lower-case letters, digits and '-', starting with a letter.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: scripts/new-impl.sh NAME   (e.g. my-mapping)" >&2
  exit 2
fi
name=$1
if [[ ! $name =~ ^[a-z][a-z0-9-]*$ ]]; then
  echo "new-impl.sh: NAME '$name': expected lower-case letters, digits and '-', starting with a letter" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
ident=${name//-/_}
out="$root/kernels/impls/$ident.cu"
if [[ -e $out ]]; then
  echo "new-impl.sh: $out exists already" >&2
  exit 1
fi
# Only the implementation files (*.cu) register names; register.h's usage comment names an
# example ("mine") that is free to take.
if grep -rqs --include='*.cu' "i.name = \"$name\"" "$root/kernels/impls" ||
   grep -rqsE --include='*.cu' "aliases = \{[^}]*\"$name\"" "$root/kernels/impls"; then
  echo "new-impl.sh: an implementation named '$name' is registered already" >&2
  exit 1
fi
sed -e "s/@NAME@/$name/g" -e "s/@IDENT@/$ident/g" "$root/kernels/impls/TEMPLATE.cu.in" > "$out"
echo "created $out"
echo "next: scripts/build-sim.sh   (builds build-cpu/dspark-sim with the new file)"
echo "then: build-cpu/dspark-sim verify --impl $name"
