#!/usr/bin/env bash
# Builds the GPU run kit on a machine with Rust and network (x86-64 Linux):
#
#   benches/gpu_kit/pack.sh [DEST] [--fmnist DIR] [--binary PATH] [--no-loader]
#
# DEST (default .kit/ at the repository root, git-ignored) receives: the release binary
# wgpu-unsupervised, run.sh, checks.sh, summarize.py, README.md, peers/ (peers.py and its
# modules), vulkan/ (Debian's libvulkan.so.1 for amd64, and in vulkan/extra/ the X11 and
# glvnd libraries NVIDIA's libGLX_nvidia.so.0 needs on a headless machine), fmnist/ with
# --fmnist, and MANIFEST (commit, date, the glibc the binary needs). Copy DEST to the target
# and run ./run.sh there. --binary uses an existing binary instead of building one;
# --no-loader skips the Debian downloads.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEST=$REPO/.kit
FMNIST=
BINARY=
LOADER=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --fmnist) FMNIST=$2; shift 2 ;;
        --binary) BINARY=$2; shift 2 ;;
        --no-loader) LOADER=0; shift ;;
        -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "pack.sh: unknown option $1" >&2; exit 64 ;;
        *) DEST=$1; shift ;;
    esac
done

if [[ -z $BINARY ]]; then
    echo "pack: cargo build --release --features cli --bin wgpu-unsupervised"
    (cd "$REPO" && cargo build --release --features cli --bin wgpu-unsupervised)
    BINARY=${CARGO_TARGET_DIR:-$REPO/target}/release/wgpu-unsupervised
fi
[[ -x $BINARY ]] || { echo "pack: no binary at $BINARY" >&2; exit 1; }

mkdir -p "$DEST/peers"
DEST=$(cd "$DEST" && pwd)
cp "$BINARY" "$DEST/wgpu-unsupervised"
cp "$HERE/run.sh" "$HERE/checks.sh" "$HERE/summarize.py" "$HERE/README.md" "$DEST/"
cp "$REPO"/benches/peers/*.py "$REPO/benches/peers/requirements.txt" "$DEST/peers/"
chmod +x "$DEST/run.sh" "$DEST/wgpu-unsupervised" "$DEST/summarize.py" "$DEST/peers/peers.py"

if [[ $LOADER == 1 ]]; then
    # Debian's packages for amd64 whatever this machine's architecture; unpacked, not installed.
    tmp=$(mktemp -d)
    o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$tmp/lists"
        -oAPT::Sandbox::User=root)
    mkdir -p "$tmp/lists/partial" "$tmp/debs" "$tmp/root"
    chmod 755 "$tmp" "$tmp/debs" # apt downloads as _apt where it can
    apt-get "${o[@]}" update -qq
    (cd "$tmp/debs" && apt-get "${o[@]}" download libvulkan1 libx11-6 libxext6 libxcb1 \
        libxau6 libxdmcp6 libbsd0 libmd0 libglvnd0)
    for deb in "$tmp"/debs/*.deb; do dpkg -x "$deb" "$tmp/root"; done
    rm -rf "$DEST/vulkan"
    mkdir -p "$DEST/vulkan/extra"
    libdir=$tmp/root/usr/lib/x86_64-linux-gnu
    cp -a "$libdir"/libvulkan.so.1* "$DEST/vulkan/"
    for lib in libX11.so.6 libXext.so.6 libxcb.so.1 libXau.so.6 libXdmcp.so.6 libGLdispatch.so.0; do
        cp -a "$libdir/$lib"* "$DEST/vulkan/extra/"
    done
    # libbsd and libmd live in /lib on some releases, /usr/lib on others.
    for lib in libbsd.so.0 libmd.so.0; do
        cp -a "$tmp"/root/{usr/,}lib/x86_64-linux-gnu/"$lib"* "$DEST/vulkan/extra/" 2>/dev/null || true
    done
    ls "$tmp/debs" >"$DEST/vulkan/PACKAGES"
    rm -rf "$tmp"
fi

if [[ -n $FMNIST ]]; then
    mkdir -p "$DEST/fmnist"
    cp "$FMNIST"/train-images-idx3-ubyte* "$FMNIST"/t10k-images-idx3-ubyte* "$DEST/fmnist/"
fi

glibc=$(objdump -T "$DEST/wgpu-unsupervised" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
    sed 's/GLIBC_//' | sort -uV | tail -1 || true)
{
    echo "commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
        git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo "+uncommitted")"
    echo "packed=$(date -u +%FT%TZ) on $(uname -m)"
    echo "glibc_required=${glibc:-unknown}"
    [[ -e $DEST/vulkan/PACKAGES ]] && echo "vulkan=$(tr '\n' ' ' <"$DEST/vulkan/PACKAGES")"
    [[ -d $DEST/fmnist ]] && echo "fmnist=yes"
} >"$DEST/MANIFEST"

echo "pack: kit in $DEST ($(du -sh "$DEST" | cut -f1)):"
sed 's/^/  /' "$DEST/MANIFEST"
echo "pack: copy it to the target (e.g. tar czf kit.tgz -C $(dirname "$DEST") $(basename "$DEST")) and run ./run.sh there"
