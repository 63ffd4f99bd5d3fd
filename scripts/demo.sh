#!/usr/bin/env bash
# The main job: every implemented system on built-in data, checked against its CPU twin.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-vulkan.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)} # Mesa's WSI complains when unset
exec cargo run --release --bin wgsparse -- demo "$@"
