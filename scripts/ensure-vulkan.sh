#!/usr/bin/env bash
# Makes sure a Vulkan driver is installed: a GPU's own, or Mesa's software device (lavapipe).
# Installs mesa-vulkan-drivers with apt-get when it can (root, or passwordless sudo); otherwise
# says exactly what to install. Exit status 0 when a driver manifest is present.
set -euo pipefail
manifests() {
  ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json \
    2>/dev/null | head -n 1
}
if [ -n "$(manifests)" ] || [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  exit 0
fi
if [ "$(uname -s)" != "Linux" ]; then
  exit 0 # macOS (Metal) and Windows (DX12/Vulkan) need no extra driver
fi
echo "wgsparse: no Vulkan driver found; installing the software Vulkan device (mesa-vulkan-drivers)…" >&2
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo_cmd="sudo"
  else
    echo "wgsparse: please run: sudo apt-get install -y mesa-vulkan-drivers" >&2
    echo "          (or install your GPU's Vulkan driver), then try again." >&2
    exit 1
  fi
fi
if command -v apt-get >/dev/null; then
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq mesa-vulkan-drivers >&2
else
  echo "wgsparse: install Mesa's Vulkan drivers with your package manager" >&2
  echo "          (Fedora: mesa-vulkan-drivers, Arch: vulkan-swrast), then try again." >&2
  exit 1
fi
[ -n "$(manifests)" ] || { echo "wgsparse: mesa-vulkan-drivers installed no driver manifest" >&2; exit 1; }
