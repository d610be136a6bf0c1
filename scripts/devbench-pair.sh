#!/usr/bin/env bash
# Packs two release builds of `latch` ("before" and "after") with the shared libraries they need into
# .devbench/pair.tar.xz, with scripts/devbench-pair-run.sh beside it, for a lent many-core machine without a Swift
# toolchain (see ../shared/devbench/README.md; at most 64 MiB travel: two stripped builds and their libraries are
# about 45 MiB compressed). Then: carry `.devbench` and run `bash .devbench/devbench-pair-run.sh` there.
# Usage, from the project root: scripts/devbench-pair.sh BEFORE_BINARY AFTER_BINARY
set -euo pipefail
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: $0 BEFORE_BINARY AFTER_BINARY (release builds of latch)"; exit 1; }
command -v patchelf >/dev/null || apt-get install -y -qq patchelf >/dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/libs" .devbench
cp "$1" "$stage/bundle/latch-before"
cp "$2" "$stage/bundle/latch-after"
for bin in "$1" "$2"; do
  for l in $(ldd "$bin" | awk '/=>/ {print $3}'); do cp -L "$l" "$stage/bundle/libs/"; done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/bundle/libs/"
strip --strip-unneeded "$stage"/bundle/libs/*.so* 2>/dev/null || true
for build in before after; do
  strip "$stage/bundle/latch-$build"
  # devbench-pair-run.sh unpacks into /tmp/lb on the target: the interpreter and library path are fixed there.
  patchelf --set-interpreter /tmp/lb/bundle/libs/ld-linux-x86-64.so.2 --force-rpath --set-rpath /tmp/lb/bundle/libs "$stage/bundle/latch-$build"
done
tar cJf .devbench/pair.tar.xz -C "$stage" bundle
cp "$(dirname "$0")/devbench-pair-run.sh" .devbench/devbench-pair-run.sh
ls -la .devbench
echo "carry .devbench to the machine and run: bash .devbench/devbench-pair-run.sh"
