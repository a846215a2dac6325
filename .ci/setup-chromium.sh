#!/usr/bin/env bash
# Installs Debian's chromium for the console's browser tests (Playwright's own browser download is not
# reachable from CI). The tests find it at $HANGAR_CHROMIUM or /usr/bin/chromium.
set -euo pipefail
if [ -n "${HANGAR_CHROMIUM:-}" ] && [ -x "$HANGAR_CHROMIUM" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium
