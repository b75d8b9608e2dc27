#!/usr/bin/env bash
# The GPU run kit: checks, ceilings, our kernel and fit benches, the torch and scikit-learn
# peers on the same data, a summary. Run from the kit folder that pack.sh made:
#
#   ./run.sh [--out DIR] [--quick] [--budget SECONDS] [--threads N] [--fmnist DIR]
#
# Writes DIR/results.jsonl (every measurement, one JSON object per line) and DIR/log.txt.
# Every step runs under `timeout` so that the whole kit ends within --budget (default 540 s).
# Exit status: 0, or 2 when our binary could not run at all.
set -u

KIT_DIR=$(cd "$(dirname "$0")" && pwd)
OUT=$KIT_DIR/out-$(date -u +%Y%m%dT%H%M%SZ)
QUICK=0
BUDGET=540
THREADS=$(nproc 2>/dev/null || echo 2)
FMNIST=
[[ -d $KIT_DIR/fmnist ]] && FMNIST=$KIT_DIR/fmnist
BIN=${KIT_BIN:-$KIT_DIR/wgpu-unsupervised}
PY=${KIT_PYTHON:-python3}

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
        --out) OUT=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --budget) BUDGET=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --fmnist) FMNIST=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 64 ;;
    esac
done

START=$(date +%s)
mkdir -p "$OUT/data"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/log.txt
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
exec > >(tee -a "$LOG") 2>&1
export KIT_WORK=$OUT

# The shapes. Full: the issue's (Fashion-MNIST k = 10 and 256, PCA-50, EM k = 10 on its
# first 50 components; the big kernel shape). Quick: small ones, for a smoke run anywhere.
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
    step "$name" "$cap" "$BIN" bench --json "$@" >"$OUT/ours.tmp"
    local rc=$?
    grep '^{' "$OUT/ours.tmp" >>"$RESULTS"
    grep -v '^{' "$OUT/ours.tmp"
    rm -f "$OUT/ours.tmp"
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

echo "wgpu-unsupervised GPU run kit: $(date -u +%FT%TZ) on $(hostname), budget ${BUDGET}s, out $OUT"
sed 's/^/  kit: /' "$KIT_DIR/MANIFEST" 2>/dev/null

# 1. What is here.
# shellcheck source=checks.sh
source "$KIT_DIR/checks.sh"
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
OURS_RAN=0
if step "info" 60 "$BIN" info --json >"$OUT/info.json"; then
    OURS_RAN=1
    sed 's/^{/{"kind":"info","impl":"wgpu-unsupervised",/' "$OUT/info.json" >>"$RESULTS"
    cat "$OUT/info.json"
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
    echo "== our binary could not open an adapter: see the lines above (loader, ICD, driver)"
fi

# 3. The data: one matrix for both sides (peers.py writes it; bench --input reads it).
MAIN=$OUT/data/main.npy BLOBS=$OUT/data/blobs.npy HAVE_MAIN=0 HAVE_BLOBS=0
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
    GMM_DATA=$OUT/data/main.pca$GMM_PCA.npy
    [[ -e $GMM_DATA ]] || GMM_DATA=$MAIN
    step "data: blobs $BIG" 120 "$PY" "$KIT_DIR/peers/peers.py" --blobs "$BIG" \
        --only kmeans --write-npy "$BLOBS" --prepare && HAVE_BLOBS=1
fi
BIG_K=${BIG##*,}

# 4. Ours: kernels, then fits on the same matrices as the peers.
if [[ $OURS_RAN == 1 ]]; then
    ours "ours: kernels at their default shapes" 120 --repeats "$REPEATS" "${KERNEL_SHAPE[@]}"
    ours "ours: assign, centroid-update at $BIG" 90 --kernel assign --kernel centroid-update \
        --shape "$BIG" --repeats "$REPEATS"
    if [[ $HAVE_MAIN == 1 ]]; then
        ks=()
        for k in "${KM_K[@]}"; do ks+=(--k "$k"); done
        ours "ours: kmeans on $MAIN_NAME" 120 --fit kmeans --input "$MAIN" "${ks[@]}" \
            --iterations "$KM_IT"
        ours "ours: pca on $MAIN_NAME" 60 --fit pca --input "$MAIN" --k "$PCA_M"
        ours "ours: gmm on $(basename "$GMM_DATA")" 120 --fit gmm-diag --fit gmm-full \
            --input "$GMM_DATA" --k "$GMM_K" --iterations "$EM_IT"
    else
        ours "ours: fits on synthetic data" 120 --fit kmeans --fit pca --fit gmm-diag \
            --fit gmm-full --shape "$SYNTH" --pca "$GMM_PCA"
    fi
fi

# 5. The peers: torch on CUDA (and FAISS) first, then scikit-learn with every core.
KM_KS=$(IFS=,; echo "${KM_K[*]}")
if [[ $HAVE_MAIN == 1 ]]; then
    DEVICE=()
    [[ ${KIT_HAVE_TORCH_CUDA:-0} == 1 ]] && DEVICE=(--torch-device cuda)
    TORCH=(--impl torch,faiss --repeats "$REPEATS" --threads "$THREADS" "${DEVICE[@]}")
    MAIN_ARGS=(--input "$MAIN" --name "$MAIN_NAME" --gmm-input "$GMM_DATA" --k "$KM_KS"
        --iterations "$KM_IT" --em-iterations "$EM_IT" --pca-components "$PCA_M"
        --gmm-k "$GMM_K")
    BLOB_ARGS=(--input "$BLOBS" --name "blobs-$BIG" --only kmeans --k "$BIG_K"
        --iterations "$BIG_IT")
    if [[ ${KIT_HAVE_SKLEARN:-0} == 1 ]]; then
        step "self-check of the torch loops against scikit-learn" 90 "$PY" \
            "$KIT_DIR/peers/peers.py" --self-check --threads "$THREADS" \
            "${DEVICE[@]}" | tee "$OUT/selfcheck.txt"
    fi
    peers "torch peer on $MAIN_NAME" 150 "${TORCH[@]}" "${MAIN_ARGS[@]}"
    if [[ $HAVE_BLOBS == 1 ]]; then
        [[ $OURS_RAN == 1 ]] && ours "ours: kmeans on blobs $BIG" 90 --fit kmeans \
            --input "$BLOBS" --k "$BIG_K" --iterations "$BIG_IT"
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

# 6. The summary.
echo "== summary ($(($(date +%s) - START))s into the kit)"
if command -v "$PY" >/dev/null 2>&1; then
    "$PY" "$KIT_DIR/summarize.py" "$RESULTS"
else
    cat "$RESULTS"
fi
[[ -s $OUT/selfcheck.txt ]] &&
    echo "peers' loops against scikit-learn: $(grep -h '^self-check:' "$OUT/selfcheck.txt" || echo 'no verdict (see the log)')"
echo "results: $RESULTS ($(wc -l <"$RESULTS") lines); log: $LOG"
rm -f "$OUT"/data/*.npy
if [[ $OURS_RAN == 0 ]]; then
    echo "our binary could not run at all (see the checks at the top of $LOG)"
    exit 2
fi
exit 0
