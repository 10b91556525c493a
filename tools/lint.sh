#!/usr/bin/env bash
# Lint: the C sources of csrc/ against .clang-format and the Python code against ruff's rules in
# pyproject.toml. Exits non-zero on any finding. The tools are pinned here (both from PyPI), so
# that every machine formats alike:
#   tools/lint.sh --install     pip-installs the pinned versions into the current environment
#   tools/lint.sh               checks (CI runs it before the tests)
#   tools/lint.sh --fix         rewrites: clang-format -i, ruff check --fix (review the diff)
set -uo pipefail
CLANG_FORMAT_VERSION=23.1.5
RUFF_VERSION=0.17.6
cd "$(dirname "$0")/.."

if [ "${1:-}" = --install ]; then
    exec python -m pip install -q "clang-format==$CLANG_FORMAT_VERSION" "ruff==$RUFF_VERSION"
fi
for tool in clang-format ruff; do
    command -v "$tool" >/dev/null || {
        echo "lint: $tool not found; run tools/lint.sh --install"; exit 2; }
done
have=$(clang-format --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
[ "$have" = "$CLANG_FORMAT_VERSION" ] || {
    echo "lint: clang-format $have, want $CLANG_FORMAT_VERSION (tools/lint.sh --install)"; exit 2; }
have=$(ruff --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
[ "$have" = "$RUFF_VERSION" ] || {
    echo "lint: ruff $have, want $RUFF_VERSION (tools/lint.sh --install)"; exit 2; }

mapfile -t c_files < <(find csrc -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \
    -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
rc=0
if [ "${1:-}" = --fix ]; then
    clang-format -i "${c_files[@]}" || rc=1
    ruff check --fix . || rc=1
    exit "$rc"
fi
# At most 3 findings a file: enough to see what is wrong; tools/lint.sh --fix rewrites it.
clang-format --dry-run -Werror --ferror-limit=3 "${c_files[@]}" || {
    echo "lint: clang-format: see above"; rc=1; }
ruff check . || { echo "lint: ruff: see above"; rc=1; }
exit "$rc"
