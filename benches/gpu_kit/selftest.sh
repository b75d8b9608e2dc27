#!/usr/bin/env bash
# Tests of the kit on fake folders: the Vulkan recipe and the checks (checks.sh), run.sh and
# device.sh end to end with a fake binary and a fake test suite (the results file, the commit
# on every record, the tests record, the iterations and busy shares), failure paths, and
# summarize.py. No GPU, loader or NVIDIA driver is needed; nothing outside a temporary
# folder is touched. Needs bash, dpkg-deb (fake packages), gcc (a fake driver library with a
# missing dependency; skipped without) and python3. Prints "N passed, M failed".
#
#   benches/gpu_kit/selftest.sh          the tests above (seconds)
#   benches/gpu_kit/selftest.sh --e2e    then the packed kit (.kit, pack.sh) for real on this
#                                        machine's adapter (lavapipe here): device.sh --quick
#                                        into a fake OUT, as non-root, and its outputs checked
#                                        (a minute or two; KIT_PYTHON may name a python3 with
#                                        numpy and scikit-learn)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
E2E=0
[[ ${1:-} == --e2e ]] && E2E=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASS=0 FAIL=0

expect() { # expect NAME STATUS_WANTED STATUS_GOT OUTPUT PATTERN...
    local name=$1 want=$2 got=$3 out=$4 ok=1 p
    shift 4
    [[ $want == any || $want == "$got" ]] || ok=0
    for p in "$@"; do grep -qE -- "$p" <<<"$out" || ok=0; done
    if ((ok)); then
        PASS=$((PASS + 1)); echo "ok    $name"
    else
        FAIL=$((FAIL + 1)); echo "FAIL  $name (status $got, want $want; patterns: $*)"
        while IFS= read -r line; do echo "      | $line"; done <<<"$out"
    fi
}

# Runs "$@" (a shell snippet) in a fresh bash with checks.sh sourced and the fake defaults.
in_kit() {
    env -i PATH="$T/bin:$PATH" HOME="$T" KIT_DIR="$T/kit" KIT_WORK="$T/work" \
        KIT_ICD_DIRS="$T/none" KIT_STANDARD_ICD_DIRS="$T/std" KIT_DRIVER_LIB_DIRS="$T/none" \
        KIT_NVIDIA_DIR="$T/nvidia" KIT_IS_ROOT=0 KIT_UNPACK_ROOT="$T/root" \
        "${EXTRA_ENV[@]}" \
        bash -c "source '$HERE/checks.sh'; $1; s=\$?; echo \"LD=\${LD_LIBRARY_PATH:-} VK=\${VK_DRIVER_FILES:-} ICD=\${VK_ICD_FILENAMES:-} EGL=\${__EGL_VENDOR_LIBRARY_FILENAMES:-}\"; exit \$s" 2>&1
}
run_in_kit() { out=$(in_kit "$1"); status=$?; }

mkdir -p "$T/kit" "$T/std" "$T/odd" "$T/libs" "$T/work" "$T/empty" "$T/bin"
REAL_LIB=$(ldd "$(command -v bash)" | awk '/libc.so.6/ {print $3}')
EXTRA_ENV=()

# A fake ldconfig: its cache is $T/ldcache (what `ldconfig -p` prints); it does nothing else.
# shellcheck disable=SC2016 # $1 is the fake's own argument
printf '#!/bin/sh\n[ "$1" = -p ] && cat "%s" 2>/dev/null\nexit 0\n' "$T/ldcache" >"$T/bin/ldconfig"
chmod +x "$T/bin/ldconfig"
ALL_LIBS=(libvulkan.so.1 libEGL.so.1 libGLdispatch.so.0 libOpenGL.so.0 libGL.so.1 libGLX.so.0
    libGLESv2.so.2)
cache() { # the libraries the fake cache lists
    : >"$T/ldcache"
    local lib
    for lib in "$@"; do
        printf '\t%s (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/%s\n' "$lib" "$lib" >>"$T/ldcache"
    done
}

# Fake Debian packages of the recipe: each holds its one library (an empty file).
fake_deb() { # PACKAGE LIBRARY
    local d=$T/debsrc/$1
    mkdir -p "$d/DEBIAN" "$d/usr/lib/x86_64-linux-gnu" "$T/kit/debs"
    printf 'Package: %s\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: kit <kit@example.org>\nDescription: fake\n' \
        "$1" >"$d/DEBIAN/control"
    : >"$d/usr/lib/x86_64-linux-gnu/$2"
    dpkg-deb --build "$d" "$T/kit/debs/${1}_1.0-1_amd64.deb" >/dev/null
}

# --- the Vulkan recipe
cache "${ALL_LIBS[@]}"
run_in_kit kit_vulkan_setup
expect "recipe: nothing to unpack when every library is here" 0 "$status" "$out" \
    "ok +Vulkan loader and GL dispatch libraries: all on this machine" "LD= "
cache libEGL.so.1 libGL.so.1
run_in_kit kit_vulkan_setup
expect "recipe: missing libraries and no packages are named" 0 "$status" "$out" \
    "MISSING +this machine lacks libvulkan.so.1 libGLdispatch.so.0 libOpenGL.so.0 libGLX.so.0 libGLESv2.so.2" \
    "pack.sh fetches them"
if command -v dpkg-deb >/dev/null; then
    fake_deb libvulkan1 libvulkan.so.1
    fake_deb libglvnd0 libGLdispatch.so.0
    fake_deb libegl1 libEGL.so.1
    EXTRA_ENV=(KIT_IS_ROOT=1)
    run_in_kit kit_vulkan_setup
    expect "recipe: as root, the missing libraries' packages are unpacked (only those)" 0 \
        "$status" "$out" \
        "ok +unpacked libvulkan1 libglvnd0 into $T/root for libvulkan.so.1 libGLdispatch.so.0 libOpenGL" \
        "LD=$T/root/usr/lib/x86_64-linux-gnu "
    [[ -e $T/root/usr/lib/x86_64-linux-gnu/libvulkan.so.1 && ! -e $T/root/usr/lib/x86_64-linux-gnu/libEGL.so.1 ]]
    expect "recipe: the unpacked files are where the packages put them" 0 $? ""
    EXTRA_ENV=()
    run_in_kit "kit_vulkan_setup && check_loader"
    expect "recipe: not root, into the work folder, said so; the loader is found there" 0 \
        "$status" "$out" "note +not root: the packages go into $T/work/vulkan-root" \
        "ok +Vulkan loader: libvulkan.so.1 \($T/work/vulkan-root/usr/lib/x86_64-linux-gnu/libvulkan.so.1\)"
    rm -rf "$T/root" "$T/work"/*
else
    echo "skip  recipe: unpacking (no dpkg-deb)"
fi
cache "${ALL_LIBS[@]}"
mkdir -p "$T/nvidia/lib64" "$T/nvidia/lib" "$T/nvidia/share/vulkan/icd.d" "$T/nvidia/share/glvnd/egl_vendor.d"
: >"$T/nvidia/share/vulkan/icd.d/nvidia_icd.json"
: >"$T/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json"
run_in_kit kit_vulkan_setup
expect "recipe: NVIDIA's folders on LD_LIBRARY_PATH (lib64 first), its ICD and EGL vendor named" \
    0 "$status" "$out" "LD=$T/nvidia/lib64:$T/nvidia/lib VK=$T/nvidia/share/vulkan/icd.d/nvidia_icd.json" \
    "EGL=$T/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json"
EXTRA_ENV=(VK_DRIVER_FILES=/given.json)
run_in_kit kit_vulkan_setup
expect "recipe: a VK_DRIVER_FILES already set is kept" 0 "$status" "$out" "VK=/given.json "
EXTRA_ENV=()
rm -rf "$T/nvidia"

# --- the loader
cache
run_in_kit check_loader
expect "loader: none anywhere" 1 "$status" "$out" "MISSING +Vulkan loader" "run the kit as root"
cache libvulkan.so.1
run_in_kit check_loader
expect "loader: the system's" 0 "$status" "$out" "ok +Vulkan loader: libvulkan.so.1"
cache

# --- the ICD
run_in_kit check_icd
expect "icd: none at all" 1 "$status" "$out" "MISSING +ICD: no Vulkan driver JSON" "VK_DRIVER_FILES="

printf '{"ICD": {"library_path": "%s"}}\n' "$REAL_LIB" >"$T/odd/nvidia_icd.json"
EXTRA_ENV=(KIT_ICD_DIRS="$T/std:$T/odd")
run_in_kit check_icd
expect "icd: NVIDIA's outside the loader's folders is exported" 0 "$status" "$out" \
    "outside the loader's folders" "VK=$T/odd/nvidia_icd.json ICD=$T/odd/nvidia_icd.json"

mv "$T/odd/nvidia_icd.json" "$T/std/"
run_in_kit check_icd
expect "icd: NVIDIA's in a standard folder is left to the loader" 0 "$status" "$out" \
    "ok +ICD: $T/std/nvidia_icd.json \(NVIDIA\)" "VK= "
rm "$T/std/nvidia_icd.json"

cp "$REAL_LIB" "$T/libs/libGLX_nvidia.so.0"
printf '{"ICD": {"library_path": "libGLX_nvidia.so.0"}}\n' >"$T/odd/nvidia_icd.json"
EXTRA_ENV=(KIT_ICD_DIRS="$T/odd" KIT_DRIVER_LIB_DIRS="$T/libs")
run_in_kit check_icd
expect "icd: a bare driver name found in a driver folder joins LD_LIBRARY_PATH" 0 "$status" \
    "$out" "driver library: $T/libs/libGLX_nvidia.so.0" "LD=$T/libs"

rm "$T/odd/nvidia_icd.json"
run_in_kit check_icd
expect "icd: no JSON but NVIDIA's library: one is written" 0 "$status" "$out" \
    "wrote $T/work/kit_nvidia_icd_libGLX_nvidia.json" "VK=$T/work/kit_nvidia_icd_libGLX_nvidia.json"
grep -q "\"library_path\": \"$T/libs/libGLX_nvidia.so.0\"" "$T/work/kit_nvidia_icd_libGLX_nvidia.json"
expect "icd: the written JSON names the library" 0 $? "$(cat "$T/work"/*.json)"
rm "$T/libs/libGLX_nvidia.so.0"

# A driver library whose dependency is missing, then supplied by the kit's extra/ folder.
if command -v gcc >/dev/null; then
    echo 'int dep(void) { return 1; }' >"$T/dep.c"
    echo 'int dep(void); int vk_icdGetInstanceProcAddr(void) { return dep(); }' >"$T/drv.c"
    gcc -shared -fPIC -o "$T/libs/libkitdep.so.1" -Wl,-soname,libkitdep.so.1 "$T/dep.c"
    gcc -shared -fPIC -o "$T/libs/libGLX_nvidia.so.0" "$T/drv.c" -L"$T/libs" -l:libkitdep.so.1
    mv "$T/libs/libkitdep.so.1" "$T/empty/"
    printf '{"ICD": {"library_path": "%s"}}\n' "$T/libs/libGLX_nvidia.so.0" >"$T/odd/nvidia_icd.json"
    EXTRA_ENV=(KIT_ICD_DIRS="$T/odd")
    run_in_kit check_icd
    expect "icd: a driver library with a missing dependency is named" 1 "$status" "$out" \
        "MISSING +driver library $T/libs/libGLX_nvidia.so.0 cannot load, it needs: libkitdep.so.1"
    rm -rf "$T/odd/nvidia_icd.json" "$T/libs"/* "$T/empty"/*
else
    echo "skip  icd: missing dependency (no gcc)"
fi

# NVIDIA's SPIR-V compiler library, opened at run time, must sit beside the driver.
cp "$REAL_LIB" "$T/libs/libGLX_nvidia.so.550.54.15"
ln -s libGLX_nvidia.so.550.54.15 "$T/libs/libGLX_nvidia.so.0"
printf '{"ICD": {"library_path": "libGLX_nvidia.so.0"}}\n' >"$T/odd/nvidia_icd.json"
EXTRA_ENV=(KIT_ICD_DIRS="$T/odd" KIT_DRIVER_LIB_DIRS="$T/libs")
run_in_kit check_icd
expect "icd: NVIDIA's driver without libnvidia-glvkspirv" 1 "$status" "$out" \
    "MISSING +NVIDIA driver 550.54.15: libnvidia-glvkspirv.so.550.54.15 is absent"
touch "$T/libs/libnvidia-glvkspirv.so.550.54.15"
run_in_kit check_icd
expect "icd: NVIDIA's driver with libnvidia-glvkspirv" 0 "$status" "$out" "ok +driver library"
rm -rf "$T/libs"/* "$T/odd/nvidia_icd.json"

EXTRA_ENV=(VK_DRIVER_FILES="$T/nowhere.json")
run_in_kit check_icd
expect "icd: VK_DRIVER_FILES naming nothing" 1 "$status" "$out" "names $T/nowhere.json, which does not exist"

printf '{"ICD": {"library_path": "libvulkan_lvp.so"}}\n' >"$T/odd/lvp_icd.x86_64.json"
EXTRA_ENV=(KIT_ICD_DIRS="$T/odd")
run_in_kit check_icd
expect "icd: only a software ICD is noted" 0 "$status" "$out" "no NVIDIA ICD" "software rasteriser"
rm "$T/odd/lvp_icd.x86_64.json"
EXTRA_ENV=()

# --- the binary
run_in_kit "check_binary $T/kit/nothing"
expect "binary: absent" 1 "$status" "$out" "MISSING +our binary: .* does not exist"
touch "$T/kit/prog"
run_in_kit "check_binary $T/kit/prog"
expect "binary: not executable" 1 "$status" "$out" "is not executable"
rm "$T/kit/prog" && cp "$(type -P true)" "$T/kit/prog"
echo "glibc_required=99.0" >"$T/kit/MANIFEST"
run_in_kit "check_binary $T/kit/prog"
expect "binary: glibc too old" 1 "$status" "$out" "needs glibc >= 99.0"
echo "glibc_required=2.17" >"$T/kit/MANIFEST"
run_in_kit "check_binary $T/kit/prog"
expect "binary: fine" 0 "$status" "$out" "ok +our binary"

# --- python
EXTRA_ENV=(KIT_PYTHON=/nonexistent/python3)
run_in_kit check_python
expect "python: absent" 1 "$status" "$out" "MISSING +python3: not found"
EXTRA_ENV=()

# --- run.sh when our binary cannot run: exit 2, the reason said, the summary still printed
out=$(env -u VK_DRIVER_FILES -u VK_ICD_FILENAMES PATH="$T/bin:$PATH" KIT_BIN="$T/kit/nothing" \
    KIT_GPU_TESTS="$T/kit/nothing" \
    KIT_PYTHON=/nonexistent/python3 KIT_ICD_DIRS="$T/none" KIT_DRIVER_LIB_DIRS="$T/none" \
    KIT_IS_ROOT=0 KIT_DEB_DIR="$T/none" KIT_NVIDIA_DIR="$T/none" \
    bash "$HERE/run.sh" --out "$T/run" --budget 60 2>&1)
status=$?
expect "run.sh: no binary, loader or ICD gives exit 2" 2 "$status" "$out" \
    "our binary: .* does not exist" "MISSING +Vulkan loader" "MISSING +ICD" \
    "could not run at all"
[[ -e $T/run/log.txt && -e $T/run/results.jsonl && -e $T/run/$(date -u +%F)-no-adapter.jsonl ]]
expect "run.sh: writes log.txt, results.jsonl and the dated copy" 0 $? "$(ls "$T/run")"

# --- run.sh and device.sh end to end on a fake kit: a fake binary (info, ceilings, one fit
# with its busy share), a fake GPU test suite with one failure, no python packages.
FAKE=$T/fakekit
mkdir -p "$FAKE"
cp "$HERE/run.sh" "$HERE/device.sh" "$HERE/checks.sh" "$HERE/summarize.py" "$FAKE/"
printf 'commit=0123456789abcdef\nglibc_required=2.17\n' >"$FAKE/MANIFEST"
cat >"$T/fakebin" <<'FAKEBIN'
#!/bin/sh
case "$*" in
    "info --json") echo '{"name":"Fake GPU 9000","backend":"Vulkan","device_type":"DiscreteGpu"}' ;;
    "info --ceilings --json") echo '{"name":"Fake GPU 9000","backend":"Vulkan","device_type":"DiscreteGpu","peak_gflops":100.0,"peak_gbps":10.0,"ceilings_timing":"timestamps"}' ;;
    bench*--fit*) mkdir -p "$WGPU_UNSUPERVISED_TUNING_CACHE"
        printf 'wgpu-unsupervised tuning cache 2\nadapter\tFake GPU 9000\nassign [a|b]\t3\t7\tb\n' \
            >"$WGPU_UNSUPERVISED_TUNING_CACHE/tuning-0123.txt"
        echo '{"impl":"wgpu-unsupervised","kind":"fit","kernel":"kmeans","n":70000,"d":784,"k":10,"iterations":4,"iterations_requested":30,"seconds":0.2,"seconds_per_iteration":0.05,"gpu_seconds":0.1,"busy":0.5,"busy_timing":"timestamps","flops":1,"bytes":1,"gflops":1,"gbps":1,"efficiency":0.1,"bound":"memory","adapter":"Fake GPU 9000","timing":"fit wall-clock","data":"blobs","detail":""}'
        echo 'a line of text' ;;
    bench*) ;;
    *) exit 1 ;;
esac
FAKEBIN
cat >"$FAKE/gpu-tests" <<'FAKETESTS'
#!/bin/sh
echo "running 3 tests"
echo "test a::works ... ok"
echo "test b::breaks ... FAILED"
echo "test c::skipped ... ignored"
echo "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s"
exit 101
FAKETESTS
chmod +x "$T/fakebin" "$FAKE/gpu-tests"
gzip -c "$T/fakebin" >"$FAKE/wgpu-unsupervised.gz"
out=$(cd "$T" && env -u VK_DRIVER_FILES -u VK_ICD_FILENAMES PATH="$T/bin:$PATH" \
    KIT_PYTHON=/nonexistent/python3 KIT_IS_ROOT=0 \
    KIT_DEB_DIR="$T/none" KIT_NVIDIA_DIR="$T/none" KIT_ICD_DIRS="$T/none" \
    KIT_DRIVER_LIB_DIRS="$T/none" OUT="$T/out" bash "$FAKE/device.sh" 120 --kit "$FAKE" 2>&1)
status=$?
today=$(date -u +%F)
keep=$T/out/benches/results/$today-fake-gpu-9000.jsonl
expect "device.sh: a fake kit runs end to end (our binary unpacked from its .gz)" 0 "$status" \
    "$out" "budget 120s" "GPU tests: failed; test result: FAILED. 1 passed; 1 failed" \
    "fit kmeans k=10 on blobs: 4 of 30 iterations, 0.05 s per iteration, GPU busy 50.0% of 0.2 s" \
    "to commit: benches/results/$today-fake-gpu-9000.jsonl"
[[ -s $keep && -s $T/out/device.txt && -s $T/out/kit/log.txt && -s $T/out/kit/gpu-tests.txt ]]
expect "device.sh: device.txt, the kit's log, the tests' output and the dated results" 0 $? \
    "$(ls -R "$T/out")"
out=$(cat "$keep" 2>&1)
expect "device.sh: every record carries the commit; the tests record has the counts" \
    0 "$(grep -vc '^{"commit":"0123456789abcdef","run":"' "$keep")" "$out" \
    '"kind":"tests","suite":"gpu","status":"failed","passed":1,"failed":1,"ignored":1,.*"failures":\["b::breaks"\]' \
    '"kind":"info","impl":"wgpu-unsupervised","name":"Fake GPU 9000"' '"kind":"ceilings"' \
    '"kind":"fit","kernel":"kmeans"' \
    '"kind":"tuning","impl":"wgpu-unsupervised","family":"assign \[a\|b\]","class":\[3,7\],"variant":"b"'
out=$(cd "$T" && OUT='' bash "$FAKE/device.sh" 10 --kit "$FAKE" 2>&1)
expect "device.sh: no output folder is an error" 64 $? "$out" "set OUT or pass --out"
out=$(cd "$T" && bash "$FAKE/device.sh" 10 --kit "$T/none" --out "$T/out2" 2>&1)
expect "device.sh: no kit is an error" 66 $? "$out" "no kit at $T/none"

# --- summarize.py
cat >"$T/r.jsonl" <<'RESULTS'
{"commit":"abc","kind":"info","impl":"wgpu-unsupervised","name":"Fake GPU","backend":"Vulkan","device_type":"DiscreteGpu"}
{"commit":"abc","kind":"ceilings","impl":"wgpu-unsupervised","name":"Fake GPU","backend":"Vulkan","device_type":"DiscreteGpu","peak_gflops":50000,"peak_gbps":4000,"ceilings_timing":"timestamps"}
{"commit":"abc","kind":"tests","suite":"gpu","status":"failed","passed":166,"failed":1,"ignored":0,"seconds":41,"failures":["profile::x"]}
{"commit":"abc","impl":"wgpu-unsupervised","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":2,"iterations_requested":10,"seconds":2.0,"seconds_per_iteration":1.0,"busy":0.25,"upload_seconds":0.5,"resident_seconds":1.5,"gflops":1,"gbps":1,"efficiency":0.5,"bound":"compute"}
{"commit":"abc","impl":"torch","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":2,"seconds":4.0,"seconds_device":3.0,"gflops":1,"gbps":1,"efficiency":0.2,"bound":"compute","device":"cuda","adapter":"Fake"}
{"commit":"abc","impl":"scikit-learn","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":5,"seconds":1.0,"gflops":1,"gbps":1,"efficiency":0.2,"bound":"compute","device":"cpu","adapter":"CPU","threads":2}
{"commit":"abc","impl":"wgpu-unsupervised","kind":"fit","kernel":"pca","n":100,"d":4,"k":2,"iterations":1,"seconds":3.0,"gflops":1,"gbps":1,"efficiency":0.5,"bound":"compute"}
{"commit":"abc","impl":"torch","kind":"fit","kernel":"pca","n":100,"d":4,"k":2,"iterations":1,"seconds":1.5,"gflops":1,"gbps":1,"efficiency":0.2,"bound":"compute","device":"cuda","adapter":"Fake"}
{"commit":"abc","kind":"tuning","impl":"wgpu-unsupervised","family":"assign [x|y]","class":[5,9],"variant":"y"}
{"commit":"abc","kind":"tuning_trial","family":"assign [x|y]","class":[5,9],"variant":"x","seconds":0.002,"chosen":false,"adapter":"Fake GPU"}
{"commit":"abc","kind":"tuning_trial","family":"assign [x|y]","class":[5,9],"variant":"y","seconds":0.001,"chosen":true,"adapter":"Fake GPU"}
not json
RESULTS
out=$(python3 "$HERE/summarize.py" "$T/r.jsonl" 2>&1)
# Ours 1 s per iteration (2 of 10 done); torch 2 s per iteration; scikit-learn 0.2.
expect "summarize: per-iteration ratios, iterations done/asked, busy shares, the header" 0 $? \
    "$out" "^commit: abc$" \
    "GPU tests \(gpu\): failed, 166 passed, 1 failed, 0 ignored in 41 s; failed: profile::x" \
    "ceilings 50000.0 GFLOP/s, 4000.0 GB/s \(timestamps\)" \
    "wgpu-unsupervised .* kmeans .* 2/10 .* 2 .* 1 .* 25% .* compute *$" \
    "torch .* kmeans .* 2 .* 4 .* 2 .* 75% .* compute .* 0\.5$" \
    "scikit-learn .* kmeans .* 5 .* 0\.2 .* compute .* 5$" \
    "torch .* pca .* compute .* 2$" \
    "^kmeans +100 x 4 +2 +2/10 +0\.5 +1\.5 +3 +0\.5$" \
    "^autotuner: assign \[x\|y\] at class \[5, 9\]: y$" \
    "^autotuner trials: assign at class \[5, 9\]: x 2\.000 ms, y 1\.000 ms\*$"
out=$(python3 "$HERE/summarize.py" "$T/empty.jsonl" 2>&1)
expect "summarize: a missing file is an error" 1 $? "$out" "No such file"

# --- the packed kit for real on this machine's adapter
if ((E2E)); then
    ROOT=$(cd "$HERE/../.." && pwd)
    if [[ ! -x $ROOT/.kit/run.sh ]]; then
        expect "e2e: a packed kit" 0 1 "no kit at $ROOT/.kit: run benches/gpu_kit/pack.sh first"
    else
        start=$(date +%s)
        out=$(cd "$ROOT" && KIT_IS_ROOT=0 OUT="$T/e2e" \
            bash benches/gpu_kit/device.sh 400 --quick --tests-filter profile --threads 2 2>&1)
        status=$?
        echo "      (e2e: $(($(date +%s) - start)) s)"
        expect "e2e: device.sh --quick on this machine's adapter" 0 "$status" "$out" \
            "GPU tests: ok; test result: ok\. [1-9][0-9]* passed; 0 failed" \
            "ceilings .* GFLOP/s, .* GB/s \((timestamps|wall-clock)\)" \
            "fit kmeans k=10 on main: [0-9]+ of 5 iterations, .* GPU busy [0-9.]+% of" \
            "fit pca k=20 on main: 1 of 1 iterations" \
            "to commit: benches/results/$(date -u +%F)-.*\.jsonl"
        keep=$(cat "$T/e2e/kit/results-file.txt" 2>/dev/null)
        commit=$(sed -n 's/^commit=//p' "$ROOT/.kit/MANIFEST")
        bad=$(grep -vc "^{\"commit\":\"$commit\"," "${keep:-/nonexistent}" 2>&1)
        expect "e2e: every record of the kept results carries the kit's commit" 0 "$bad" \
            "$(cat "${keep:-/nonexistent}" 2>&1)" '"kind":"tests","suite":"gpu","status":"ok"' \
            '"kind":"fit","kernel":"kmeans".*"busy":'
    fi
fi

echo "selftest: $PASS passed, $FAIL failed"
((FAIL == 0))
