#!/usr/bin/env bash
# Installs what the console's browser tests need, when missing, and prints the Python to run
# them with (tests/run.sh exports it as NATIVE_TEST_BROWSER_PYTHON):
#
# - Debian's Chromium (/usr/bin/chromium), with apt-get;
# - Playwright for Python, in a virtual environment of its own under target/ (never the system
#   Python). It drives the system Chromium: no browser is downloaded.
#
# Everything it says goes to stderr; stdout is the Python's path alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
say() { echo "tests/browser/setup.sh: $*" >&2; }
if ! [ -x /usr/bin/chromium ]; then
    say "installing Debian's chromium with apt-get (a few minutes the first time)"
    export DEBIAN_FRONTEND=noninteractive
    sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    sudo_ apt-get update -qq >&2
    sudo_ apt-get install -y -qq chromium >&2
fi
venv="$root/target/browser-venv"
if ! "$venv/bin/python" -c 'import playwright.sync_api' 2>/dev/null; then
    say "installing playwright with pip into $venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'playwright>=1.40' >&2
fi
echo "$venv/bin/python"
