#!/usr/bin/env bash
# Install Debian's chromium and chromium-driver for the headless browser test (tests/test_app_browser.py).
# Quiet and idempotent: does nothing when /usr/bin/chromium already exists.  Only the distribution's packages are
# used; no browser build is ever downloaded by a tool (never run `playwright install`).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: apt-get not found; the browser test will be skipped" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
echo "install-browser: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
