#!/usr/bin/env bash
# Debian's Python packages the unmodified runpod SDK (../shared/clients/runpod-python) imports, for the tests
# of real Python workers (test/jobs.pythonSdk.test.ts). PyPI is not needed: the SDK's source is kept there.
set -euo pipefail
if ! /usr/bin/python3 -c 'import aiohttp, requests, tomli, tomlkit, paramiko, backoff, cpuinfo' 2>/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-aiohttp python3-requests python3-tomli python3-tomlkit \
    python3-paramiko python3-backoff python3-cpuinfo >/dev/null
fi
