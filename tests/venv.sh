# Sourced by the test command (tests/run.sh) and tests/cargo_lambda.sh: puts the test command's
# Python tools (tests/requirements.txt) on PATH from a virtual environment of their own, made on
# first use and again whenever tests/requirements.txt changes, and reused otherwise. Nothing is
# installed into the machine's Python, and nothing of it is used: the environment does not see
# the system's site-packages, and `python3` on PATH is its own from here on.
#
#   NATIVE_TESTS_VENV   where the environment lives
#                       (default: ${XDG_CACHE_HOME:-~/.cache}/native-tests/venv)
venv="${NATIVE_TESTS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/native-tests/venv}"
requirements="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/requirements.txt"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
mkdir -p "$(dirname "$venv")"
# One maker at a time: two test commands starting together wait for the same environment.
exec 9>"$venv.lock"
flock 9
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ] || [ ! -x "$venv/bin/python" ]; then
    echo "tests/venv.sh: making the test tools' virtual environment in $venv:" \
        "$(grep -v '^#' "$requirements" | grep . | tr '\n' ' ')(a few minutes the first time)" >&2
    rm -rf "$venv"
    # The machine's python3 makes it (with pip, and without the system's packages).
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
        -r "$requirements"
    echo "$want" >"$venv/.requirements.sha256"
fi
flock -u 9
exec 9>&-
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
unset PYTHONHOME PYTHONPATH
# A pip run by anything below installs into this environment, or refuses.
export PIP_REQUIRE_VIRTUALENV=true
