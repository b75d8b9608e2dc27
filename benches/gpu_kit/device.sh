#!/usr/bin/env bash
# The one command on a lent GPU machine. From the repository's root, with .kit (pack.sh)
# carried beside the working tree:
#
#   bash benches/gpu_kit/device.sh [SECONDS] [--kit DIR] [--out DIR] [run.sh options...]
#
# SECONDS (default 540) is the whole budget: the GPU's description, the Vulkan recipe, the
# GPU test suite, the ceilings, our benches and the peers all end within it (the device
# tool's limit is 600 s a command). Everything lands under --out (default $OUT, the folder the
# device tool brings back): device.txt (all that was printed), kit/ (results.jsonl, log.txt,
# gpu-tests.txt, info and ceilings), and benches/results/<date>-<adapter>.jsonl, the file to
# commit: copy OUT/benches into the repository's root. Options after SECONDS go to run.sh
# (e.g. --quick, --no-tests, --tests-filter TEXT).
set -u
T0=$(date +%s)
TOTAL=540
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    TOTAL=$1
    shift
fi
KIT=.kit
DEST=${OUT:-}
RUN_ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --kit) KIT=$2; shift 2 ;;
        --out) DEST=$2; shift 2 ;;
        -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) RUN_ARGS+=("$1"); shift ;;
    esac
done
if [[ -z $DEST ]]; then
    echo "device.sh: no output folder: set OUT or pass --out DIR" >&2
    exit 64
fi
if [[ ! -x $KIT/run.sh ]]; then
    echo "device.sh: no kit at $KIT (run benches/gpu_kit/pack.sh --fmnist DIR on the build" \
        "machine and carry .kit)" >&2
    exit 66
fi
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
exec > >(tee -a "$DEST/device.txt") 2>&1

echo "== device.sh: budget ${TOTAL}s, kit $KIT, out $DEST, $(date -u +%FT%TZ)"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1 | sed 's/^/  /'
else
    echo "  no nvidia-smi"
fi
echo "  $(nproc 2>/dev/null || echo '?') CPU cores; $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB memory"}')"

# What is left, less 15 s for start-up and the copy of the results.
left=$((TOTAL - ($(date +%s) - T0) - 15))
bash "$KIT/run.sh" --out "$DEST/kit" --budget "$left" \
    --results-dir "$DEST/benches/results" "${RUN_ARGS[@]}"
rc=$?
echo "== device.sh: run.sh exit status $rc, $(($(date +%s) - T0))s in all"
if [[ -s $DEST/kit/results-file.txt ]]; then
    keep=$(cat "$DEST/kit/results-file.txt")
    echo "== to commit: ${keep#"$DEST"/} (copy $DEST/benches into the repository's root)"
fi
exit $rc
