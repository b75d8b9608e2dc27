#!/usr/bin/env bash
# The GPU run kit: the Vulkan recipe and checks, the GPU test suite, ceilings, our kernel and
# fit benches, the torch and scikit-learn peers on the same data, a summary. Run from the kit
# folder that pack.sh made (device.sh runs it on a lent machine):
#
#   ./run.sh [--out DIR] [--quick] [--budget SECONDS] [--threads N] [--fmnist DIR]
#            [--no-tests] [--tests-filter TEXT] [--results-dir DIR]
#
# Writes DIR/results.jsonl (every measurement, one JSON object per line, each with the
# commit the kit was built from), DIR/log.txt, DIR/gpu-tests.txt, and a copy of the results
# as RESULTS_DIR/<date>-<adapter>.jsonl (default RESULTS_DIR: DIR), its path in
# DIR/results-file.txt. Every step runs under `timeout` so that the whole kit ends within
# --budget (default 540 s). Exit status: 0, or 2 when our binary could not run at all.
set -u

KIT_DIR=$(cd "$(dirname "$0")" && pwd)
OUT=$KIT_DIR/out-$(date -u +%Y%m%dT%H%M%SZ)
QUICK=0
BUDGET=540
THREADS=$(nproc 2>/dev/null || echo 2)
FMNIST=
[[ -d $KIT_DIR/fmnist ]] && FMNIST=$KIT_DIR/fmnist
TESTS=1
TESTS_FILTER=
RESULTS_DIR=
PY=${KIT_PYTHON:-python3}

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --out) OUT=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --budget) BUDGET=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --fmnist) FMNIST=$2; shift 2 ;;
        --no-tests) TESTS=0; shift ;;
        --tests-filter) TESTS_FILTER=$2; shift 2 ;;
        --results-dir) RESULTS_DIR=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 64 ;;
    esac
done

START=$(date +%s)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RESULTS_DIR=${RESULTS_DIR:-$OUT}
LOG=$OUT/log.txt
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
exec > >(tee -a "$LOG") 2>&1
# The autotuner's choices go to a cache of this run's own (fresh, so every choice is timed
# on this card for this commit) and come back with OUT; step 7 records them.
export WGPU_UNSUPERVISED_TUNING_CACHE=$OUT/tuning
# Data (up to a GiB) and unpacked binaries live outside OUT, which goes back to the caller.
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/wgpu-kit.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
export KIT_WORK=$SCRATCH
COMMIT=$(sed -n 's/^commit=//p' "$KIT_DIR/MANIFEST" 2>/dev/null)
COMMIT=${COMMIT:-unknown}

# The binaries travel gzipped (pack.sh); a plain one (an older kit, KIT_BIN) is used as is.
unpacked() { # NAME: the runnable path of the kit's binary NAME
    if [[ -e $KIT_DIR/$1.gz ]]; then
        gzip -dc "$KIT_DIR/$1.gz" >"$SCRATCH/$1" && chmod +x "$SCRATCH/$1"
        echo "$SCRATCH/$1"
    else
        echo "$KIT_DIR/$1"
    fi
}
BIN=${KIT_BIN:-$(unpacked wgpu-unsupervised)}
GPU_TESTS=${KIT_GPU_TESTS:-$(unpacked gpu-tests)}

# The shapes. Full: the issue's (Fashion-MNIST k = 10 and 256, PCA-50, EM k = 10 on its
# first 50 components; the big kernel shape). Quick: small ones, for a smoke run anywhere.
# shellcheck disable=SC2054 # commas inside the elements are the shapes' own
if [[ $QUICK == 1 ]]; then
    KM_K=(10 64) KM_IT=5 EM_IT=5 PCA_M=20 GMM_K=10 GMM_PCA=20 SYNTH=4000,32,8
    BIG=20000,64,64 BIG_IT=3 KERNEL_SHAPE=(--shape 10000,32,16) REPEATS=1 QUICK_FLAG=--quick
else
    KM_K=(10 256) KM_IT=30 EM_IT=20 PCA_M=50 GMM_K=10 GMM_PCA=50 SYNTH=70000,784,10
    BIG=1000000,256,4096 BIG_IT=5 KERNEL_SHAPE=() REPEATS=3 QUICK_FLAG=
fi

remaining() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME CAP COMMAND...: runs COMMAND under timeout (CAP seconds, or what the budget has
# left less 10 s for the summary), or skips it when less than 10 s would be left.
step() {
    local name=$1 cap=$2 left limit rc
    shift 2
    left=$(($(remaining) - 10))
    limit=$((cap < left ? cap : left))
    if ((limit < 10)); then
        echo "== $name: skipped (budget of ${BUDGET}s spent)" >&2
        return 125
    fi
    echo "== $name (limit ${limit}s; $(($(date +%s) - START))s into the kit)" >&2
    timeout -k 5 "$limit" "$@"
    rc=$?
    if ((rc == 124 || rc == 137)); then
        echo "== $name: stopped by its ${limit}s limit (what it wrote is kept)" >&2
    elif ((rc != 0)); then
        echo "== $name: exit status $rc" >&2
    fi
    return $rc
}

# Our bench: JSON lines to the results, everything else to the log.
ours() {
    local name=$1 cap=$2
    shift 2
    step "$name" "$cap" "$BIN" bench --json "$@" >"$SCRATCH/ours.tmp"
    local rc=$?
    grep '^{' "$SCRATCH/ours.tmp" >>"$RESULTS"
    grep -v '^{' "$SCRATCH/ours.tmp"
    # Each fit's iterations and GPU-busy share, as they come.
    awk 'function f(key) {
             if (!match($0, "\"" key "\":[^,}]*")) return ""
             v = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
             gsub(/"/, "", v)
             return v
         }
         /"kind":"fit"/ && /"busy":/ {
             printf "  fit %s k=%s on %s: %s of %s iterations, %.4g s per iteration, GPU busy %.1f%% of %.4g s\n",
                 f("kernel"), f("k"), f("data"), f("iterations"), f("iterations_requested"),
                 f("seconds_per_iteration"), 100 * f("busy"), f("seconds")
         }' "$SCRATCH/ours.tmp"
    rm -f "$SCRATCH/ours.tmp"
    return $rc
}

# A peers.py run; its JSON lines go to the results. It starts no new fit after two thirds
# of its time limit, so that the fit under way can end before the limit.
peers() {
    local name=$1 cap=$2 left
    shift 2
    left=$(($(remaining) - 10))
    ((left < cap)) && cap=$left
    step "$name" "$cap" "$PY" "$KIT_DIR/peers/peers.py" --out "$RESULTS" --append \
        --max-seconds $((cap * 2 / 3)) "$@"
}

# The iterations our K-Means fits on data DATA did, as K:IT,... for peers.py: the bench runs a
# fixed count (KMeans::fixed_iterations), so this is the count asked for; reading it back
# keeps the peers on the same work should a fit ever end early (a stop, an error's partial).
ours_kmeans_iterations() {
    "$PY" - "$RESULTS" "$1" <<'EOF' 2>/dev/null
import json, sys
pairs = {}
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if (r.get("impl") == "wgpu-unsupervised" and r.get("kind") == "fit"
            and r.get("kernel") == "kmeans" and r.get("data") == sys.argv[2]):
        pairs[r["k"]] = r["iterations"]
print(",".join(f"{k}:{it}" for k, it in sorted(pairs.items())))
EOF
}

echo "wgpu-unsupervised GPU run kit: $(date -u +%FT%TZ) on $(hostname), budget ${BUDGET}s, out $OUT"
sed 's/^/  kit: /' "$KIT_DIR/MANIFEST" 2>/dev/null

# 1. The Vulkan recipe, then what is here.
# shellcheck source-path=SCRIPTDIR source=checks.sh
source "$KIT_DIR/checks.sh"
echo "== Vulkan (Debian's loader and glvnd unpacked where missing, NVIDIA's ICD)"
kit_vulkan_setup
echo "== checks"
OURS_OK=1
check_binary "$BIN" || OURS_OK=0
check_loader || OURS_OK=0
check_icd || OURS_OK=0
check_gpu
check_python
if [[ -z $FMNIST ]]; then
    kit_note "no Fashion-MNIST (pack.sh --fmnist DIR, or run.sh --fmnist DIR): synthetic 70000x784 blobs instead"
fi
[[ $OURS_OK == 0 ]] && echo "== our binary lacks something above; trying it anyway"
echo "  env      LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"

# 2. The adapter and its ceilings.
OURS_RAN=0 ADAPTER=no-adapter
if step "info" 60 "$BIN" info --json >"$OUT/info.json"; then
    OURS_RAN=1
    sed 's/^{/{"kind":"info","impl":"wgpu-unsupervised",/' "$OUT/info.json" >>"$RESULTS"
    cat "$OUT/info.json"
    ADAPTER=$(sed -n 's/^{"name":"\([^"]*\)".*/\1/p' "$OUT/info.json")
    if ! grep -q '"backend":"Vulkan"' "$OUT/info.json"; then
        echo "  WARNING  our binary is not on Vulkan (the Vulkan ICD failed; see above): figures" \
            "are of that backend"
    fi
    if grep -q '"device_type":"Cpu"' "$OUT/info.json"; then
        echo "  WARNING  our binary picked a software adapter (CPU); figures are not the GPU's." \
            "Check the ICD lines above, or set WGPU_ADAPTER_NAME."
    fi
    step "ceilings" 60 "$BIN" info --ceilings --json >"$OUT/ceilings.json" &&
        sed 's/^{/{"kind":"ceilings","impl":"wgpu-unsupervised",/' "$OUT/ceilings.json" >>"$RESULTS"
    cat "$OUT/ceilings.json"
else
    echo "== our binary could not open an adapter: see the lines above (loader, ICD, driver);" \
        "the Vulkan loader's own account is in $OUT/loader-debug.txt"
    VK_LOADER_DEBUG=error,warn,info timeout 60 "$BIN" info --all >"$OUT/loader-debug.txt" 2>&1
fi

# 3. The GPU test suite, before any bench: a wrong result makes every figure moot.
if [[ $TESTS == 1 && $OURS_RAN == 1 ]]; then
    if [[ -x $GPU_TESTS ]]; then
        # It reads tests/data under the folder it was built in (manifest-dir).
        MAN=$(cat "$KIT_DIR/manifest-dir" 2>/dev/null)
        if [[ -n $MAN && ! -d $MAN/tests/data && -d $KIT_DIR/testdata ]]; then
            if ! { mkdir -p "$MAN/tests" && cp -r "$KIT_DIR/testdata" "$MAN/tests/data"; }; then
                kit_note "could not place tests/data under $MAN: the tests that read it fail"
            fi
        fi
        T0=$(date +%s)
        filter=()
        [[ -n $TESTS_FILTER ]] && filter=("$TESTS_FILTER")
        step "GPU test suite" $((BUDGET / 3 > 240 ? 240 : BUDGET / 3)) "$GPU_TESTS" \
            --test-threads=4 "${filter[@]}" >"$OUT/gpu-tests.txt" 2>&1
        rc=$?
        summary=$(grep -E '^test result:' "$OUT/gpu-tests.txt" | tail -1)
        count() { sed -n "s/.* \([0-9]*\) $1.*/\1/p" <<<"$summary"; }
        failures=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$OUT/gpu-tests.txt" |
            sed 's/.*/"&"/' | paste -sd, -)
        status=ok
        ((rc == 124 || rc == 137)) && status=timeout
        ((rc != 0 && rc != 124 && rc != 137)) && status=failed
        [[ -z $summary && $status == ok ]] && status=no-summary
        printf '{"kind":"tests","suite":"gpu","status":"%s","passed":%s,"failed":%s,"ignored":%s,"seconds":%s,"filter":"%s","failures":[%s],"adapter":"%s"}\n' \
            "$status" "$(count passed || true)" "$(count failed || true)" \
            "$(count ignored || true)" $(($(date +%s) - T0)) "$TESTS_FILTER" "$failures" \
            "$ADAPTER" | sed 's/:,/:null,/g' >>"$RESULTS"
        echo "  GPU tests: $status; ${summary:-no summary line} (full output: $OUT/gpu-tests.txt)"
    else
        kit_note "no GPU test suite in the kit (pack.sh without --no-tests builds it)"
    fi
fi

# 4. The data: one matrix for both sides (peers.py writes it; bench --input reads it).
MAIN=$SCRATCH/main.npy BLOBS=$SCRATCH/blobs.npy HAVE_MAIN=0 HAVE_BLOBS=0
if [[ ${KIT_HAVE_NUMPY:-0} == 1 ]]; then
    if [[ -n $FMNIST ]]; then
        MAIN_NAME=fashion-mnist
        SRC=(--fmnist "$FMNIST")
    else
        MAIN_NAME=blobs-$SYNTH
        SRC=(--blobs "$SYNTH")
    fi
    step "data: $MAIN_NAME" 120 "$PY" "$KIT_DIR/peers/peers.py" "${SRC[@]}" $QUICK_FLAG \
        --gmm-pca "$GMM_PCA" --only gmm-diag --write-npy "$MAIN" --prepare && HAVE_MAIN=1
    [[ $QUICK == 1 && -n $FMNIST ]] && MAIN_NAME=$MAIN_NAME-first5000
    GMM_DATA=$SCRATCH/main.pca$GMM_PCA.npy
    [[ -e $GMM_DATA ]] || GMM_DATA=$MAIN
    step "data: blobs $BIG" 120 "$PY" "$KIT_DIR/peers/peers.py" --blobs "$BIG" \
        --only kmeans --write-npy "$BLOBS" --prepare && HAVE_BLOBS=1
fi
BIG_K=${BIG##*,}

# 5. Ours: kernels, then fits on the same matrices as the peers, each profiled once more for
# its GPU-busy share.
if [[ $OURS_RAN == 1 ]]; then
    ours "ours: kernels at their default shapes" 120 --repeats "$REPEATS" "${KERNEL_SHAPE[@]}"
    ours "ours: assign, centroid-update at $BIG" 90 --kernel assign --kernel centroid-update \
        --shape "$BIG" --repeats "$REPEATS"
    if [[ $HAVE_MAIN == 1 ]]; then
        ks=()
        for k in "${KM_K[@]}"; do ks+=(--k "$k"); done
        ours "ours: kmeans on $MAIN_NAME" 150 --fit kmeans --input "$MAIN" "${ks[@]}" \
            --iterations "$KM_IT" --profile
        ours "ours: pca on $MAIN_NAME" 60 --fit pca --input "$MAIN" --k "$PCA_M" --profile
        ours "ours: gmm on $(basename "$GMM_DATA")" 150 --fit gmm-diag --fit gmm-full \
            --input "$GMM_DATA" --k "$GMM_K" --iterations "$EM_IT" --profile
    else
        ours "ours: fits on synthetic data" 150 --fit kmeans --fit pca --fit gmm-diag \
            --fit gmm-full --shape "$SYNTH" --pca "$GMM_PCA" --profile
    fi
fi

# 6. The peers: torch on CUDA (and FAISS) first, then scikit-learn with every core. K-Means
# runs the iterations ours did.
KM_KS=$(IFS=,; echo "${KM_K[*]}")
if [[ $HAVE_MAIN == 1 ]]; then
    DEVICE=()
    [[ ${KIT_HAVE_TORCH_CUDA:-0} == 1 ]] && DEVICE=(--torch-device cuda)
    # shellcheck disable=SC2054 # a list of peers for peers.py
    TORCH=(--impl torch,faiss --repeats "$REPEATS" --threads "$THREADS" "${DEVICE[@]}")
    MAIN_ARGS=(--input "$MAIN" --name "$MAIN_NAME" --gmm-input "$GMM_DATA" --k "$KM_KS"
        --iterations "$KM_IT" --em-iterations "$EM_IT" --pca-components "$PCA_M"
        --gmm-k "$GMM_K")
    SAME=$(ours_kmeans_iterations main)
    [[ -n $SAME ]] && MAIN_ARGS+=(--kmeans-iterations "$SAME") &&
        echo "== K-Means iterations ours did on $MAIN_NAME (the peers do as many): $SAME"
    if [[ ${KIT_HAVE_SKLEARN:-0} == 1 ]]; then
        step "self-check of the torch loops against scikit-learn" 90 "$PY" \
            "$KIT_DIR/peers/peers.py" --self-check --threads "$THREADS" \
            "${DEVICE[@]}" | tee "$OUT/selfcheck.txt"
    fi
    peers "torch peer on $MAIN_NAME" 150 "${TORCH[@]}" "${MAIN_ARGS[@]}"
    BLOB_ARGS=(--input "$BLOBS" --name "blobs-$BIG" --only kmeans --k "$BIG_K"
        --iterations "$BIG_IT")
    if [[ $HAVE_BLOBS == 1 ]]; then
        [[ $OURS_RAN == 1 ]] && ours "ours: kmeans on blobs $BIG" 90 --fit kmeans \
            --input "$BLOBS" --k "$BIG_K" --iterations "$BIG_IT" --profile
        SAME=$(ours_kmeans_iterations blobs)
        [[ -n $SAME ]] && BLOB_ARGS+=(--kmeans-iterations "$SAME")
        peers "torch peer on blobs $BIG" 90 "${TORCH[@]}" "${BLOB_ARGS[@]}"
    fi
    if [[ ${KIT_HAVE_SKLEARN:-0} == 1 ]]; then
        peers "scikit-learn on $MAIN_NAME ($THREADS threads)" 150 --impl scikit-learn \
            --threads "$THREADS" "${MAIN_ARGS[@]}"
        [[ $HAVE_BLOBS == 1 ]] && peers "scikit-learn on blobs $BIG ($THREADS threads)" 150 \
            --impl scikit-learn --threads "$THREADS" "${BLOB_ARGS[@]}"
    fi
else
    echo "== peers skipped: no data (python3 with numpy is needed for them)"
fi

# 6b. Issue 34's CLI target: K-Means on 20M x 64 blobs, k = 1000, with the CLI's default start
# and stopping rule (<= 10 s on an H100 or H200). Last, and not in --quick: the data are
# 5.1 GB. Its record (kind "fit", timing "cli wall-clock") holds the command's wall time, its
# fit and seeding seconds and the iterations it took.
if [[ $QUICK == 0 && $OURS_RAN == 1 && ${KIT_HAVE_NUMPY:-0} == 1 ]]; then
    CLI_BIG=20000000,64,1000
    B20=$SCRATCH/blobs-cli.npy
    if step "data: blobs $CLI_BIG" 120 "$PY" "$KIT_DIR/peers/peers.py" --blobs "$CLI_BIG" \
        --only kmeans --write-npy "$B20" --prepare; then
        t0=$(date +%s.%N)
        step "ours: the CLI's kmeans on blobs $CLI_BIG, default start" 150 "$BIN" kmeans \
            --input "$B20" --k "${CLI_BIG##*,}" --json >"$SCRATCH/cli.tmp"
        wall=$("$PY" -c "import time; print(time.time() - $t0)")
        "$PY" - "$SCRATCH/cli.tmp" "$wall" "blobs-$CLI_BIG" >>"$RESULTS" <<'EOF_CLI'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if lines:
    r = json.loads(lines[-1])
    print(json.dumps({
        "impl": "wgpu-unsupervised", "kind": "fit", "kernel": "kmeans", "n": r["n"],
        "d": r["d"], "k": r["k"], "iterations": r["n_iter"], "seconds": float(sys.argv[2]),
        "fit_seconds": r.get("fit_seconds"), "init_seconds": r.get("init_seconds"),
        "init": r.get("init"), "inertia": r.get("inertia"), "converged": r.get("converged"),
        "adapter": r.get("adapter"), "timing": "cli wall-clock", "data": sys.argv[3],
        "detail": f"CLI, default start ({r.get('init')}), seeding {r.get('init_seconds', 0):.3g} s",
    }))
EOF_CLI
        sed 's/^/  /' "$SCRATCH/cli.tmp"
    fi
    rm -f "$B20"
fi

# 7. The autotuner's choices (which variant or tile each kernel family runs at each shape
# class: a K-step 16 tile, say, where it won), then every record with the commit and the
# run's time; the copy to keep in the repository. Cache lines are
# <family and candidates> TAB <class a> TAB <class b> TAB <variant>, after two header lines.
for f in "$WGPU_UNSUPERVISED_TUNING_CACHE"/tuning-*.txt; do
    [[ -f $f ]] || continue
    awk -F'\t' 'NR > 2 && NF == 4 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ {
        gsub(/["\\]/, "", $1); gsub(/["\\]/, "", $4)
        printf "{\"kind\":\"tuning\",\"impl\":\"wgpu-unsupervised\",\"family\":\"%s\",\"class\":[%s,%s],\"variant\":\"%s\"}\n", $1, $2, $3, $4
    }' "$f" >>"$RESULTS"
done
RUN=$(date -u -d "@$START" +%FT%TZ 2>/dev/null || date -u +%FT%TZ)
sed -i "s/^{/{\"commit\":\"$COMMIT\",\"run\":\"$RUN\",/" "$RESULTS"
slug=$(tr '[:upper:]' '[:lower:]' <<<"$ADAPTER" | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
name=$(date -u -d "@$START" +%F 2>/dev/null || date -u +%F)-${slug:-no-adapter}
mkdir -p "$RESULTS_DIR"
KEEP=$RESULTS_DIR/$name.jsonl n=2
while [[ -e $KEEP ]]; do KEEP=$RESULTS_DIR/$name-$n.jsonl n=$((n + 1)); done
cp "$RESULTS" "$KEEP"
echo "$KEEP" >"$OUT/results-file.txt"

# 8. The summary.
echo "== summary ($(($(date +%s) - START))s into the kit)"
if command -v "$PY" >/dev/null 2>&1; then
    "$PY" "$KIT_DIR/summarize.py" "$RESULTS"
else
    cat "$RESULTS"
fi
[[ -s $OUT/selfcheck.txt ]] &&
    echo "peers' loops against scikit-learn: $(grep -h '^self-check:' "$OUT/selfcheck.txt" || echo 'no verdict (see the log)')"
echo "results: $RESULTS ($(wc -l <"$RESULTS") lines); log: $LOG"
echo "to keep in the repository: $KEEP (commit $COMMIT)"
if [[ $OURS_RAN == 0 ]]; then
    echo "our binary could not run at all (see the checks at the top of $LOG)"
    exit 2
fi
exit 0
