#!/usr/bin/env bash
# The test suite: shader validation (no GPU), readers and formats, and every kernel against
# its CPU twin on the available adapter (lavapipe on machines without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-vulkan.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export WGSPARSE_CACHE_DIR=${WGSPARSE_CACHE_DIR:-$(mktemp -d)}
cargo test --all-targets "$@"
cargo test --doc "$@"
