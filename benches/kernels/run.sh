#!/usr/bin/env bash
# Before/after figures of issue 23 (the product-shaped kernels) on one machine, in one run:
# the crate's kernels and fits (`wgpu-unsupervised bench --json`) and scikit-learn on the same
# Fashion-MNIST matrix with the same thread count, each step started only when the load
# average is below MAX_LOAD (the machine is shared; see BENCHMARKS.md).
#
#   benches/kernels/run.sh OUT.jsonl BIN [BIN...]
#
# BIN: release builds of the CLI (`cargo build --release --features cli`), e.g. the commit
# before and the one after. Needs bench-data/fmnist.npy (peers.py --fmnist DIR --write-npy
# bench-data/fmnist.npy --prepare) and a Python with numpy, scikit-learn and threadpoolctl
# (PYTHON, default .venv/bin/python). STEPS picks a subset (default: all).
set -euo pipefail
out=$1; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${DATA:-$root/bench-data/fmnist.npy}
py=${PYTHON:-$root/.venv/bin/python}
max_load=${MAX_LOAD:-0.6}
steps=${STEPS:-"kernels kmeans10 kmeans256 pca peers"}
export NODEVICE_SELECT=1

quiet() {
    # Waits (at most an hour) until the 1-minute load average is below max_load; prints it.
    for _ in $(seq 360); do
        l=$(cut -d' ' -f1 /proc/loadavg)
        if awk -v l="$l" -v m="$max_load" 'BEGIN { exit !(l < m) }'; then
            echo "load $l" >&2
            return 0
        fi
        sleep 10
    done
    echo "load still $(cut -d' ' -f1 /proc/loadavg) after an hour: measuring anyway" >&2
}

note() { # tags each JSON line with the binary and the load at its start
    local tag=$1 load
    load=$(cut -d' ' -f1 /proc/loadavg)
    sed -e "s|^{|{\"build\":\"$tag\",\"load_start\":$load,|"
}

for step in $steps; do
    for bin in "$@"; do
        tag=$(basename "$bin")
        case $step in
            kernels)
                quiet; "$bin" bench --json --kernel assign --kernel centroid-update --kernel covariance | note "$tag" >>"$out" ;;
            kmeans10)
                quiet; "$bin" bench --json --fit kmeans --input "$data" --k 10 --iterations 30 | note "$tag" >>"$out" ;;
            kmeans256)
                quiet; "$bin" bench --json --fit kmeans --input "$data" --k 256 --iterations 5 | note "$tag" >>"$out" ;;
            pca)
                quiet; "$bin" bench --json --fit pca --input "$data" --k 50 | note "$tag" >>"$out" ;;
            peers) ;;
        esac
    done
    if [ "$step" = peers ]; then
        quiet; "$py" "$root/benches/peers/peers.py" --input "$data" --name fashion-mnist --only kmeans --k 10 --iterations 30 --impl scikit-learn --threads 2 | note scikit-learn >>"$out"
        quiet; "$py" "$root/benches/peers/peers.py" --input "$data" --name fashion-mnist --only kmeans --k 256 --iterations 5 --impl scikit-learn --threads 2 | note scikit-learn >>"$out"
        quiet; "$py" "$root/benches/peers/peers.py" --input "$data" --name fashion-mnist --only pca --pca-components 50 --impl scikit-learn --threads 2 | note scikit-learn >>"$out"
    fi
done
