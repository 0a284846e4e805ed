#!/usr/bin/env bash
# Real suites under pytest-depgraph: the measurement behind bench/COMPAT.md.
#
#   bench/compat_suites.sh <pytest-depgraph checkout> [--repeat K] [--only NAME]...
#                          [--workdir DIR] [--worktree]
#
# For each project it keeps a throwaway venv under the work dir (default /tmp/compat, or
# $COMPAT_WORKDIR), created and filled once and reused afterwards. The project comes from its
# PyPI sdist (`pip download --no-deps --no-binary :all:`), is installed from that sdist together
# with its test needs, pytest-xdist and its dependency plugin (pytest-dependency 0.6.1 or
# pytest-order 1.5.0). pytest-depgraph is installed NON-editable from a snapshot of the given
# checkout with `pip install --force-reinstall --no-deps`, on every invocation: a rerun on
# another commit only reinstalls that. The snapshot is the checkout's committed HEAD
# (`git archive`), so the table names exactly what it measured; --worktree takes the files as
# they are instead, uncommitted changes included. (Building from a snapshot also keeps pip's
# in-tree build out of the checkout.)
#
# Every run starts from a freshly unpacked sdist (the suites write to their own tree, e.g.
# pastastore's on-disk stores) and is run as
#   theirs      -p no:depgraph          serial
#   ours                                serial
#   ours -n 2   -n 2                    (K times with --repeat K: the outcome can vary by timing)
#   plain xdist -p no:depgraph -n 2
# always with -p no:cacheprovider and under `timeout 300`. One Markdown table row per
# project/command is printed, with passed/skipped/failed/errors from pytest's final line
# (" +N xf" when tests xfailed); logs go to <workdir>/logs/.
#
# --only NAME (repeatable) keeps the rows whose id or group is NAME: ids are archive-tools,
# pastastore, openfisca-pair, openfisca-suite, pd-group-fixture, pd-group-fixture2,
# pd-or_dependency, pd-runtime; groups are openfisca and pytest-dependency.
#
# Environment: PYTHON (interpreter for the venvs, default python3).

set -euo pipefail

usage() {
    sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

# ---------------------------------------------------------------- arguments
CHECKOUT=""
REPEAT=1
ONLY=()
WORK="${COMPAT_WORKDIR:-/tmp/compat}"
PYTHON="${PYTHON:-python3}"
WORKTREE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --repeat) REPEAT="$2"; shift 2 ;;
        --only) ONLY+=("$2"); shift 2 ;;
        --workdir) WORK="$2"; shift 2 ;;
        --worktree) WORKTREE=1; shift ;;
        -h|--help) usage 0 ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) [ -z "$CHECKOUT" ] || usage; CHECKOUT="$1"; shift ;;
    esac
done
[ -n "$CHECKOUT" ] || usage
[ -f "$CHECKOUT/pyproject.toml" ] || { echo "$CHECKOUT: not a pytest-depgraph checkout" >&2; exit 2; }
CHECKOUT="$(cd "$CHECKOUT" && pwd)"
case "$REPEAT" in ''|*[!0-9]*|0) echo "--repeat wants a positive integer" >&2; exit 2 ;; esac

mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
SDISTS="$WORK/sdists"      # downloaded sdists, kept
VENVS="$WORK/venvs"        # one venv per project, kept
RUNS="$WORK/runs"          # unpacked sdists, recreated for every run
LOGS="$WORK/logs"          # one log per run, overwritten by the next invocation
mkdir -p "$SDISTS" "$VENVS" "$RUNS" "$LOGS"

COMMIT="$(git -C "$CHECKOUT" rev-parse --short HEAD 2>/dev/null || echo '?')"
DIRTY=""
if [ -n "$(git -C "$CHECKOUT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    DIRTY=" (uncommitted changes in the checkout not measured)"
fi

# Snapshot of the checkout that pip may build in: its committed HEAD, or with --worktree (or
# outside git) its files as they are, without .git and build leftovers.
DG_SRC="$WORK/depgraph-src"
rm -rf "$DG_SRC"
mkdir -p "$DG_SRC"
if [ -z "$WORKTREE" ] && [ "$COMMIT" != "?" ]; then
    git -C "$CHECKOUT" archive --format=tar HEAD | tar -C "$DG_SRC" -xf -
else
    [ -z "$DIRTY" ] || DIRTY=" + uncommitted changes"
    tar -C "$CHECKOUT" --exclude=.git --exclude=build --exclude=dist --exclude='*.egg-info' \
        --exclude=.tox --exclude=.venv --exclude=__pycache__ -cf - . | tar -C "$DG_SRC" -xf -
fi

wanted() {  # wanted ID GROUP: is this row selected by --only?
    [ ${#ONLY[@]} -eq 0 ] && return 0
    local n
    for n in "${ONLY[@]}"; do
        [ "$n" = "$1" ] || [ "$n" = "$2" ] && return 0
    done
    return 1
}

log() { echo "[compat] $*" >&2; }

# ---------------------------------------------------------------- sdists and venvs
fetch_sdist() {  # fetch_sdist NAME==VERSION -> prints the sdist's path
    local spec="$1" name ver f
    name="${spec%%==*}"; ver="${spec##*==}"
    f="$(find_sdist "$name" "$ver")"
    if [ -z "$f" ]; then
        log "downloading sdist $spec"
        "$PYTHON" -m pip download -q --no-deps --no-binary :all: -d "$SDISTS" "$spec" >&2
        f="$(find_sdist "$name" "$ver")"
    fi
    [ -n "$f" ] || { echo "no sdist for $spec in $SDISTS" >&2; exit 1; }
    echo "$f"
}

find_sdist() {  # sdist file names normalise '-' to '_' (or not, for old releases)
    local n
    for n in "$1" "${1//-/_}"; do
        for ext in tar.gz zip; do
            [ -f "$SDISTS/$n-$2.$ext" ] && { echo "$SDISTS/$n-$2.$ext"; return; }
        done
    done
}

unpack() {  # unpack SDIST NAME -> prints the fresh source tree (top folder of the sdist)
    local sdist="$1" dest="$RUNS/$2"
    rm -rf "$dest"
    mkdir -p "$dest"
    case "$sdist" in
        *.zip) "$PYTHON" -m zipfile -e "$sdist" "$dest" ;;
        *) tar -C "$dest" -xzf "$sdist" ;;
    esac
    echo "$dest/$(ls "$dest" | head -n1)"
}

setup_venv() {  # setup_venv NAME PIP-ARGS...: create/fill once, reinstall pytest-depgraph always
    local name="$1"; shift
    local venv="$VENVS/$name" want="$*"
    if [ ! -f "$venv/.compat-installed" ] || [ "$(cat "$venv/.compat-installed")" != "$want" ]; then
        log "creating venv $name"
        rm -rf "$venv"
        "$PYTHON" -m venv "$venv"
        "$venv/bin/pip" install -q "$@" >&2
        echo "$want" > "$venv/.compat-installed"
    fi
    log "installing pytest-depgraph $COMMIT into $name"
    "$venv/bin/pip" install -q --force-reinstall --no-deps "$DG_SRC" >&2
}

versions() {  # versions VENV: the versions that decide the outcome
    "$VENVS/$1/bin/python" - <<'EOF'
from importlib import metadata
out = []
for d in ("pytest", "pytest-xdist", "pytest-dependency", "pytest-order", "pytest-depgraph"):
    try:
        out.append(f"{d} {metadata.version(d)}")
    except metadata.PackageNotFoundError:
        pass
print(", ".join(out))
EOF
}

# ---------------------------------------------------------------- running and parsing
# summary LOG RC: "p/s/f/e" from pytest's final line, " +N xf" for xfailed.
summary() {
    local logf="$1" rc="$2" line
    if [ "$rc" = 124 ]; then echo "timeout"; return; fi
    line="$(grep -E '^=+ .*( in [0-9.]+s| in [0-9:.]+ ).*=+$|^=+ no tests ran' "$logf" | tail -n1 || true)"
    [ -n "$line" ] || { echo "rc=$rc, no summary"; return; }
    count() { echo "$line" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' | head -n1 || true; }
    local p s f e xf
    p="$(count passed)"; s="$(count skipped)"; f="$(count failed)"
    e="$(count 'errors?')"; xf="$(count xfailed)"
    printf '%s/%s/%s/%s' "${p:-0}" "${s:-0}" "${f:-0}" "${e:-0}"
    [ -z "$xf" ] || printf ' +%s xf' "$xf"
    echo
}

# run_pytest ID LABEL VENV SDIST SUBDIR ENV PYTEST-ARGS...: one run in a fresh tree
# (ENV: space-separated VAR=value words; @TREE@ in them stands for the unpacked sdist)
run_pytest() {
    local id="$1" label="$2" venv="$3" sdist="$4" sub="$5" envs="$6"; shift 6
    local tree logf rc
    tree="$(unpack "$sdist" "$id")"
    envs="${envs//@TREE@/$tree}"
    [ -z "${PREPARE:-}" ] || "$PREPARE" "$tree" "$venv"
    logf="$LOGS/$id.$label.log"
    log "$id: $label"
    set +e
    (
        cd "$tree/$sub"
        unset PYTEST_ADDOPTS
        # shellcheck disable=SC2086
        env $envs PATH="$VENVS/$venv/bin:$PATH" \
            timeout 300 "$VENVS/$venv/bin/pytest" -p no:cacheprovider "$@"
    ) > "$logf" 2>&1
    rc=$?
    set -e
    summary "$logf" "$rc"
}

# row ID VENV SDIST SUBDIR ENV "SHOWN COMMAND" PYTEST-ARGS...: the four columns, one table row
row() {
    local id="$1" venv="$2" sdist="$3" sub="$4" envs="$5" shown="$6"; shift 6
    local theirs ours n2="" plain i r
    theirs="$(run_pytest "$id" theirs "$venv" "$sdist" "$sub" "$envs" -p no:depgraph "$@")"
    ours="$(run_pytest "$id" ours "$venv" "$sdist" "$sub" "$envs" "$@")"
    for i in $(seq 1 "$REPEAT"); do
        r="$(run_pytest "$id" "n2-$i" "$venv" "$sdist" "$sub" "$envs" -n 2 "$@")"
        n2="${n2:+$n2; }$r"
    done
    plain="$(run_pytest "$id" plain-xdist "$venv" "$sdist" "$sub" "$envs" -p no:depgraph -n 2 "$@")"
    echo "| $id | \`$shown\` | $theirs | $ours | $n2 | $plain |"
}

# ---------------------------------------------------------------- project-specific preparation
# pastastore's sdist ships neither tests/data/*.csv nor hydropandas: write synthetic series with
# the names and date ranges that conftest.py and the tests read/assert (fixed seed, so every run
# and every machine with the same numpy/pandas gets the same files).
pastastore_data() {
    local tree="$1" venv="$2"
    mkdir -p "$tree/tests/data"
    "$VENVS/$venv/bin/python" - "$tree/tests/data" <<'EOF'
import sys
import numpy as np
import pandas as pd

out = sys.argv[1]
rng = np.random.default_rng(20261122)

def rain(start, end):
    idx = pd.date_range(start, end, freq="D")
    wet = rng.random(idx.size) < 0.45
    return pd.Series(np.where(wet, rng.gamma(0.8, 0.004, idx.size), 0.0), idx)  # m/d

def evap(start, end):
    idx = pd.date_range(start, end, freq="D")
    doy = idx.dayofyear.to_numpy()
    base = 0.0015 + 0.0013 * np.sin(2 * np.pi * (doy - 80) / 365.25)
    return pd.Series(np.clip(base + rng.normal(0, 2e-4, idx.size), 0, None), idx)

def head(p, e, start, end, level):
    r = (p - 0.8 * e).rolling(120, min_periods=1).mean() * 400 + level
    r = r.loc[start:end]
    return r + rng.normal(0, 0.01, r.size)

def write(series, name, col):
    series.rename(col).to_frame().to_csv(f"{out}/{name}", index_label="date")

p1, e1 = rain("2000-01-01", "2020-12-31"), evap("2000-01-01", "2020-12-31")
write(p1, "rain.csv", "prec")
write(e1, "evap.csv", "evap")
write(head(p1, e1, "2010-01-14", "2015-06-28", 10.0), "obs.csv", "head")   # tmin/tmax asserted

p2, e2 = rain("2000-01-01", "2016-11-22"), evap("2000-01-01", "2016-11-22")  # evap2 tmax asserted
write(p2, "rain_nb1.csv", "prec")
write(e2, "evap_nb1.csv", "evap")
write(head(p2, e2, "2005-01-01", "2015-12-31", 12.0), "head_nb1.csv", "head")

months = pd.date_range("2000-01-31", "2016-12-31", freq="ME")
write(pd.Series(rng.uniform(50.0, 150.0, months.size), months), "well_month_end.csv", "Q")
write(head(p2, e2, "2008-01-01", "2015-12-31", 8.0), "gw_obs.csv", "head")
EOF
}

# ---------------------------------------------------------------- the projects
echo "<!-- compat_suites.sh: pytest-depgraph $COMMIT$DIRTY from $(basename "$CHECKOUT"), repeat $REPEAT -->"
echo "Started $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load:$(uptime | sed 's/.*load average://')."
echo
echo "| project | command (in the unpacked sdist) | theirs | ours | ours -n 2 | plain xdist |"
echo "| --- | --- | --- | --- | --- | --- |"
VERSIONS=()

# archive-tools 0.6 (pytest-dependency; class chains, computed runtime depends())
if wanted archive-tools archive-tools; then
    sd="$(fetch_sdist archive-tools==0.6)"
    setup_venv archive-tools "$sd" pyyaml lark python-dateutil pytest \
        pytest-xdist==3.8.0 pytest-dependency==0.6.1
    VERSIONS+=("archive-tools: $(versions archive-tools)")
    # The tests chdir into temp dirs before running the scripts: the path must be absolute.
    PREPARE="" row archive-tools archive-tools "$sd" tests "BUILD_SCRIPTS_DIR=@TREE@/scripts" \
        "cd tests; BUILD_SCRIPTS_DIR=\$PWD/../scripts pytest"
fi

# pastastore 2.0.0 (pytest-dependency; on-disk stores in module-scoped parametrized fixtures)
if wanted pastastore pastastore; then
    sd="$(fetch_sdist pastastore==2.0.0)"
    setup_venv pastastore "$sd" jinja2 arcticdb pytest-benchmark pytest \
        pytest-xdist==3.8.0 pytest-dependency==0.6.1
    VERSIONS+=("pastastore: $(versions pastastore)")
    PREPARE=pastastore_data row pastastore pastastore "$sd" . "" \
        "pytest -o addopts= tests/test_002_connectors.py tests/test_003_pastastore.py" \
        -o addopts= tests/test_002_connectors.py tests/test_003_pastastore.py
fi

# openfisca-survey-manager 6.6.0 (pytest-order after= across modules)
if wanted openfisca-pair openfisca || wanted openfisca-suite openfisca; then
    sd="$(fetch_sdist openfisca-survey-manager==6.6.0)"
    setup_venv openfisca "$sd" "openfisca-country-template>=7.1.5,<8" "pyreadstat>=1.2.1,<1.3" \
        scipy pytest pytest-xdist==3.8.0 pytest-order==1.5.0
    VERSIONS+=("openfisca: $(versions openfisca)")
    T=openfisca_survey_manager/tests
    if wanted openfisca-pair openfisca; then
        PREPARE="" row openfisca-pair openfisca "$sd" . "" \
            "pytest $T/test_add_survey_to_collection.py $T/test_write_parquet.py" \
            "$T/test_add_survey_to_collection.py" "$T/test_write_parquet.py"
    fi
    if wanted openfisca-suite openfisca; then
        PREPARE="" row openfisca-suite openfisca "$sd" . "" "pytest $T" "$T"
    fi
fi

# pytest-dependency 0.6.1 doc/examples: the files that differed on -n 2, plus runtime.py
EXAMPLES=(group-fixture group-fixture2 or_dependency runtime)
any=""
for ex in "${EXAMPLES[@]}"; do wanted "pd-$ex" pytest-dependency && any=1; done
if [ -n "$any" ]; then
    sd="$(fetch_sdist pytest-dependency==0.6.1)"
    setup_venv pytest-dependency "$sd" pytest pytest-xdist==3.8.0
    VERSIONS+=("pytest-dependency: $(versions pytest-dependency)")
    for ex in "${EXAMPLES[@]}"; do
        wanted "pd-$ex" pytest-dependency || continue
        PREPARE="" row "pd-$ex" pytest-dependency "$sd" doc/examples "" "pytest $ex.py" "$ex.py"
    done
fi

echo
echo "Counts are passed/skipped/failed/errors from pytest's final line; the -n 2 column lists"
echo "each of the $REPEAT run(s). All runs: -p no:cacheprovider, timeout 300, fresh unpacked sdist."
for v in "${VERSIONS[@]}"; do echo "* $v"; done
echo "Finished $(date -u '+%Y-%m-%d %H:%M UTC'), load:$(uptime | sed 's/.*load average://')."
