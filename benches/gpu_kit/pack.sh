#!/usr/bin/env bash
# Builds the GPU run kit on a machine with Rust and network (x86-64 Linux, Debian's apt):
#
#   benches/gpu_kit/pack.sh [DEST] [--fmnist DIR] [--binary PATH] [--tests PATH]
#                           [--no-tests] [--no-debs]
#
# DEST (default .kit/ at the repository root, git-ignored) receives: the release CLI
# (wgpu-unsupervised.gz) and the GPU test suite (gpu-tests.gz: `cargo test --release
# --all-features --test gpu`, stripped), both gzipped to save carried space; testdata/ (the
# suite's tests/data) and manifest-dir (the CARGO_MANIFEST_DIR the suite was built with,
# where it looks for tests/data); run.sh, device.sh, checks.sh, summarize.py, README.md;
# peers/ (peers.py and its modules); debs/ (Debian's libvulkan1 libegl1 libglvnd0 libopengl0
# libgl1 libglx0 libgles2 for amd64, the recipe that found an H200's Vulkan driver); fmnist/
# with --fmnist (the four idx files); MANIFEST (commit, date, the glibc the binaries need).
# --binary and --tests copy existing binaries instead of building; --no-tests leaves the
# suite out; --no-debs skips the downloads.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEST=$REPO/.kit
FMNIST=
BINARY=
TESTS=
WITH_TESTS=1
DEBS=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --fmnist) FMNIST=$2; shift 2 ;;
        --binary) BINARY=$2; shift 2 ;;
        --tests) TESTS=$2; shift 2 ;;
        --no-tests) WITH_TESTS=0; shift ;;
        --no-debs) DEBS=0; shift ;;
        -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "pack.sh: unknown option $1" >&2; exit 64 ;;
        *) DEST=$1; shift ;;
    esac
done
TARGET=${CARGO_TARGET_DIR:-$REPO/target}

if [[ -z $BINARY ]]; then
    echo "pack: cargo build --release --features cli --bin wgpu-unsupervised"
    (cd "$REPO" && cargo build --release --features cli --bin wgpu-unsupervised)
    BINARY=$TARGET/release/wgpu-unsupervised
fi
[[ -x $BINARY ]] || { echo "pack: no binary at $BINARY" >&2; exit 1; }

if [[ $WITH_TESTS == 1 && -z $TESTS ]]; then
    echo "pack: cargo test --release --all-features --test gpu --no-run (no debug info)"
    # The test executable's path, from cargo's own report of what it built (the CLI it
    # also builds has an executable too: keep the artifact of the test target `gpu`).
    TESTS=$(cd "$REPO" && CARGO_PROFILE_RELEASE_DEBUG=0 cargo test --release --all-features \
        --test gpu --no-run --message-format=json |
        grep '"kind":\["test"\],"crate_types":\["bin"\],"name":"gpu"' |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
    [[ -n $TESTS ]] || { echo "pack: cargo built no GPU test executable" >&2; exit 1; }
fi

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
rm -rf "$DEST/peers" "$DEST/debs" "$DEST/fmnist" "$DEST/testdata" "$DEST/vulkan"
rm -f "$DEST"/wgpu-unsupervised* "$DEST"/gpu-tests* "$DEST/manifest-dir"
mkdir -p "$DEST/peers"
gzip -9 -c "$BINARY" >"$DEST/wgpu-unsupervised.gz"
if [[ $WITH_TESTS == 1 ]]; then
    tmp=$(mktemp)
    cp "$TESTS" "$tmp"
    strip "$tmp" 2>/dev/null || echo "pack: strip failed; the test suite goes unstripped"
    gzip -9 -c "$tmp" >"$DEST/gpu-tests.gz"
    rm -f "$tmp"
    cp -r "$REPO/tests/data" "$DEST/testdata"
    # The suite reads tests/data under the CARGO_MANIFEST_DIR it was compiled in.
    echo "$REPO" >"$DEST/manifest-dir"
fi
cp "$HERE/run.sh" "$HERE/device.sh" "$HERE/checks.sh" "$HERE/summarize.py" "$HERE/README.md" \
    "$DEST/"
cp "$REPO"/benches/peers/*.py "$REPO/benches/peers/requirements.txt" "$DEST/peers/"
chmod +x "$DEST/run.sh" "$DEST/device.sh" "$DEST/summarize.py" "$DEST/peers/peers.py"

if [[ $DEBS == 1 ]]; then
    # Debian's packages for amd64 whatever this machine's architecture; unpacked on the
    # target, not installed (see checks.sh, kit_vulkan_setup).
    tmp=$(mktemp -d)
    o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$tmp/lists"
        -oAPT::Sandbox::User=root)
    mkdir -p "$tmp/lists/partial" "$DEST/debs"
    apt-get "${o[@]}" update -qq
    (cd "$DEST/debs" && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 \
        libgl1 libglx0 libgles2)
    rm -rf "$tmp"
fi

if [[ -n $FMNIST ]]; then
    mkdir -p "$DEST/fmnist"
    cp "$FMNIST"/train-images-idx3-ubyte* "$FMNIST"/t10k-images-idx3-ubyte* "$DEST/fmnist/"
fi

glibc=$(objdump -T "$BINARY" ${TESTS:+"$TESTS"} 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
    sed 's/GLIBC_//' | sort -uV | tail -1 || true)
{
    echo "commit=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)$(
        git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo "+uncommitted")"
    echo "packed=$(date -u +%FT%TZ) on $(uname -m)"
    echo "glibc_required=${glibc:-unknown}"
    [[ -d $DEST/debs ]] && echo "debs=$(cd "$DEST/debs" && printf '%s ' *.deb)"
    [[ -d $DEST/fmnist ]] && echo "fmnist=yes"
    [[ -e $DEST/gpu-tests.gz ]] && echo "gpu_tests=yes"
} >"$DEST/MANIFEST"

echo "pack: kit in $DEST ($(du -sh "$DEST" | cut -f1)):"
sed 's/^/  /' "$DEST/MANIFEST"
if [[ $DEST == "$REPO/.kit" ]]; then
    # What the device tool carries: the working tree (tracked and untracked, not ignored)
    # plus .kit. It must stay within 64 MiB.
    tree=$(cd "$REPO" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- |
        tail -1 | cut -f1)
    kit=$(du -sb "$DEST" | cut -f1)
    echo "pack: carried with the working tree: $(((tree + kit) >> 20)) MiB of 64" \
        "(tree $((tree >> 20)) MiB, .kit $((kit >> 20)) MiB)"
    ((tree + kit < 64 << 20)) || echo "pack: WARNING: over 64 MiB; the device tool will refuse it" >&2
fi
echo "pack: on the device, from the repository's root, carrying .kit: bash benches/gpu_kit/device.sh 540"
