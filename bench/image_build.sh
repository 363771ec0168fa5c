#!/usr/bin/env bash
# The image's build times: cached (nothing changed) and after a one-line
# change to a Rust file of the server, against the cold build that
# scripts/test-image.sh logs ("built in N s"). Uses the same podman set-up
# and stand-in base images (scripts/lib/containers.sh); builds a copy of the
# committed tree, so the checkout is never touched.
#
#   bench/image_build.sh        # after scripts/test-image.sh has run once
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/containers.sh
source scripts/lib/containers.sh
containers_setup
stand_in_images

work=$(mktemp -d)
trap 'rm -rf "$work"; podman rmi -f localhost/pipelab-bench:latest >/dev/null 2>&1 || true' EXIT
git archive HEAD | tar -x -C "$work"
context=$(python3 "$work/scripts/lib/docker_context.py" | head -n1)
build() {
  local t0=$EPOCHREALTIME
  podman build -q --format docker --pull=never \
    --build-arg RUST_IMAGE=docker.io/library/rust:1.95-bookworm \
    --build-arg NODE_IMAGE=docker.io/library/node:20-bookworm-slim \
    --build-arg DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim \
    -t localhost/pipelab-bench:latest "$work" >/dev/null
  python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')"
}
first=$(build)
cached=$(build)
# One line of the server's Rust: the binary compiles again, nothing else.
echo '// a one-line change' >> "$work/cli/src/main.rs"
changed=$(build)
size=$(podman image inspect --format '{{.Size}}' localhost/pipelab-bench:latest)
printf '| build | seconds |\n|---|---|\n| first here (layers from earlier runs kept) | %s |\n| cached, nothing changed | %s |\n| one line of cli/src/main.rs changed | %s |\n' "$first" "$cached" "$changed"
printf 'image: %d MB uncompressed; build context: %s\n' $((size / 1000000)) "$context"
