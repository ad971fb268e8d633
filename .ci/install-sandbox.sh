#!/usr/bin/env bash
# Make sure the tools of the isolated entrants' sandbox (agents/sandbox.py) are there: util-linux (unshare, setpriv,
# prlimit, findmnt), mount (mount, umount), bash and coreutils (env).  Debian ships them all by default (util-linux,
# bash and coreutils are Essential, mount is Priority: required), so this normally does nothing.
set -euo pipefail

missing=()
for tool in unshare setpriv prlimit findmnt mount umount bash env; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-sandbox: sandbox tools present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-sandbox: missing ${missing[*]} and no apt-get; isolated entrants will run unconfined" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq util-linux mount bash coreutils >/dev/null
echo "install-sandbox: installed util-linux mount bash coreutils (was missing: ${missing[*]})"
