#!/usr/bin/env bash
# The README's two commands, runnable on a fresh machine (Python 3.11, gcc, git):
#   ./run.sh demo   install if needed, start the broker on ./muster-data at 127.0.0.1:9092, run the demo
#   ./run.sh test   install if needed, lint, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"

stamp=.venv/.muster-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ .ci/install -nt "$stamp" ] \
  || [ constraints.txt -nt "$stamp" ]; then
  .ci/install
  touch "$stamp"
fi

case "${1:-}" in
  demo)
    shift
    exec .venv/bin/muster demo "$@"
    ;;
  test)
    shift
    echo "==> ruff check src tests bench reliability conformance"
    .venv/bin/ruff check src tests bench reliability conformance
    echo "==> pytest"
    rc=0
    .venv/bin/pytest -q --durations=30 "$@" || rc=$?
    if [ "$rc" -eq 5 ]; then
      echo "run.sh test: pytest collected no tests (exit 5): FAILED" >&2
    fi
    exit "$rc"
    ;;
  *)
    echo "usage: ./run.sh demo|test" >&2
    exit 2
    ;;
esac
