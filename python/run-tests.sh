#!/usr/bin/env bash
# The Python package's tests, on a clean machine with Rust and Python 3.10+ only: a virtual
# environment (python/target/venv, ignored by git), the pinned test requirements, the
# package built from this checkout exactly as a user builds it (`pip install ./python`),
# the stubs checked against the built module, then pytest. pytest's exit code 5 (no tests
# collected) is a failure, not a pass.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${WGPU_UNSUPERVISED_VENV:-$here/target/venv}"
python="${PYTHON:-python3}"

echo "== python: virtual environment in $venv"
if ! "$python" -m venv "$venv"; then
    # Debian's system Python keeps venv (ensurepip) in a package of its own.
    if command -v apt-get >/dev/null 2>&1; then
        sudo=""
        if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
        $sudo apt-get update -qq
        $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        "$python" -m venv "$venv"
    else
        echo "cannot make a virtual environment with $python" >&2
        exit 1
    fi
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$here/requirements-test.txt"
echo "== python: pip install ./python (builds the extension)"
"$venv/bin/python" -m pip install -q "$here"

# From a directory outside the source tree, so that the installed package is the one tested.
cd "$here/tests"
echo "== python: stubtest (_core.pyi against the built module)"
"$venv/bin/python" -m mypy.stubtest wgpu_unsupervised._core
echo "== python: pytest"
set +e
"$venv/bin/python" -m pytest -p no:cacheprovider -q "$here/tests" "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure" >&2
    exit 1
fi
exit "$status"
