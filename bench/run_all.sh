#!/usr/bin/env bash
# Run every benchmark of bench/ one after another and print their Markdown tables.
#
#   bench/run_all.sh            # full runs (about 35 minutes on 2 cores)
#   bench/run_all.sh --quick    # smaller, one-repeat variants (about 4 minutes)
#   bench/run_all.sh --targets [OPTIONS]   # the performance targets table: bench/targets.py
#
# Uses $PYTHON (default: python3 on PATH), which needs pytest, pytest-xdist and this package
# installed (e.g. `pip install -e '.[test]'`); peers_bench.py makes its own venvs under
# /tmp/depgraph-bench-venvs/. Each script also runs alone: see bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
quick=0
if [ "${1:-}" = "--targets" ]; then
    shift
    exec "$PYTHON" bench/targets.py "$@"
fi
for arg in "$@"; do
    case "$arg" in
        --quick) quick=1 ;;
        *) echo "usage: $0 [--quick] | --targets [bench/targets.py options]" >&2; exit 2 ;;
    esac
done

echo "# bench/run_all.sh on $(hostname), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

echo "## Graph phases (bench/graph_bench.py)"
echo
if [ "$quick" = 1 ]; then "$PYTHON" bench/graph_bench.py --repeat 1; else "$PYTHON" bench/graph_bench.py; fi
echo

echo "## xdist scheduling (bench/xdist_bench.py)"
echo
if [ "$quick" = 1 ]; then "$PYTHON" bench/xdist_bench.py --quick; else "$PYTHON" bench/xdist_bench.py --stress; fi
echo

echo "## Collection overhead and full runs vs peers (bench/peers_bench.py)"
echo
# quick: the 1k suites, one run each; full: also the 10k suites (see bench/README.md)
if [ "$quick" = 1 ]; then "$PYTHON" bench/peers_bench.py --quick; else "$PYTHON" bench/peers_bench.py; fi
echo

echo "## The run report (bench/report_bench.py)"
echo
if [ "$quick" = 1 ]; then "$PYTHON" bench/report_bench.py --sizes 1000 --repeat 1; else "$PYTHON" bench/report_bench.py; fi
echo

echo "## Collection errors at scale (bench/errors_bench.py)"
echo
if [ "$quick" = 1 ]; then "$PYTHON" bench/errors_bench.py --scenarios renamed,cycle; else "$PYTHON" bench/errors_bench.py; fi
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); ${SECONDS} s in all"
