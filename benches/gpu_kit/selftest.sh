#!/usr/bin/env bash
# Tests of the kit's checks (checks.sh), failure paths of run.sh and summarize.py, on fake
# folders: no GPU, loader or NVIDIA driver is needed. Needs bash, gcc (for a fake driver
# library with a missing dependency) and python3. Prints "N passed, M failed".
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
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
        sed 's/^/      | /' <<<"$out"
    fi
}

# Runs "$@" (a shell snippet) in a fresh bash with checks.sh sourced and the fake defaults.
in_kit() {
    env -i PATH="$PATH" HOME="$T" KIT_DIR="$T/kit" KIT_WORK="$T/work" \
        KIT_ICD_DIRS="$T/none" KIT_STANDARD_ICD_DIRS="$T/std" KIT_DRIVER_LIB_DIRS="$T/none" \
        KIT_LOADER_DIR="$T/kit/vulkan" "${EXTRA_ENV[@]}" \
        bash -c "source '$HERE/checks.sh'; $1; s=\$?; echo \"LD=\${LD_LIBRARY_PATH:-} VK=\${VK_DRIVER_FILES:-} ICD=\${VK_ICD_FILENAMES:-}\"; exit \$s" 2>&1
}
run_in_kit() { out=$(in_kit "$1"); status=$?; }

mkdir -p "$T/kit/vulkan" "$T/std" "$T/odd" "$T/libs" "$T/work" "$T/empty"
REAL_LIB=$(ldd "$(command -v bash)" | awk '/libc.so.6/ {print $3}')
EXTRA_ENV=()

# --- the loader
EXTRA_ENV=(KIT_SYSTEM_LOADER=none)
run_in_kit check_loader
expect "loader: none anywhere" 1 "$status" "$out" "MISSING +Vulkan loader" "re-pack"
touch "$T/kit/vulkan/libvulkan.so.1"
run_in_kit check_loader
expect "loader: the kit's copy goes on LD_LIBRARY_PATH" 0 "$status" "$out" \
    "kit's copy" "LD=$T/kit/vulkan( |:)"
EXTRA_ENV=(KIT_SYSTEM_LOADER=/usr/lib/libvulkan.so.1)
run_in_kit check_loader
expect "loader: the system's wins" 0 "$status" "$out" "this machine's" "LD= "
EXTRA_ENV=()

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
grep -q "\"library_path\": \"$T/libs/libGLX_nvidia.so.0\"" "$T/work/kit_nvidia_icd_libGLX_nvidia.json" &&
    expect "icd: the written JSON names the library" 0 0 "" ||
    expect "icd: the written JSON names the library" 0 1 "$(cat "$T/work"/*.json)"
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
    mkdir -p "$T/kit/vulkan/extra" && mv "$T/empty/libkitdep.so.1" "$T/kit/vulkan/extra/"
    run_in_kit check_icd
    expect "icd: the kit's extra/ supplies the missing dependency" 0 "$status" "$out" \
        "lacked: libkitdep.so.1" "ok +driver library" "LD=$T/kit/vulkan/extra"
    rm -rf "$T/kit/vulkan/extra" "$T/odd/nvidia_icd.json" "$T/libs"/*
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
out=$(KIT_BIN="$T/kit/nothing" KIT_PYTHON=/nonexistent/python3 KIT_ICD_DIRS="$T/none" \
    KIT_DRIVER_LIB_DIRS="$T/none" KIT_SYSTEM_LOADER=none KIT_LOADER_DIR="$T/none" \
    bash "$HERE/run.sh" --out "$T/run" --budget 60 2>&1)
status=$?
expect "run.sh: no binary, loader or ICD gives exit 2" 2 "$status" "$out" \
    "our binary: .* does not exist" "MISSING +Vulkan loader" "MISSING +ICD" \
    "could not run at all"
[[ -e $T/run/log.txt && -e $T/run/results.jsonl ]]
expect "run.sh: writes log.txt and results.jsonl" 0 $? ""

# --- summarize.py
cat >"$T/r.jsonl" <<'EOF'
{"kind":"info","impl":"wgpu-unsupervised","name":"Fake GPU","backend":"Vulkan","device_type":"DiscreteGpu"}
{"impl":"wgpu-unsupervised","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":10,"seconds":2.0,"gflops":1,"gbps":1,"efficiency":0.5,"bound":"compute"}
{"impl":"torch","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":10,"seconds":4.0,"gflops":1,"gbps":1,"efficiency":0.2,"bound":"compute","device":"cuda","adapter":"Fake"}
{"impl":"scikit-learn","kind":"fit","kernel":"kmeans","n":100,"d":4,"k":2,"iterations":5,"seconds":1.0,"gflops":1,"gbps":1,"efficiency":0.2,"bound":"compute","device":"cpu","adapter":"CPU","threads":2}
not json
EOF
out=$(python3 "$HERE/summarize.py" "$T/r.jsonl" 2>&1)
expect "summarize: ratios, per iteration when the counts differ" 0 $? "$out" \
    "Fake GPU" "torch .* 0\.5( |$)" "scikit-learn .* 1\*( |$)"
out=$(python3 "$HERE/summarize.py" "$T/empty.jsonl" 2>&1)
expect "summarize: a missing file is an error" 1 $? "$out" "No such file"

echo "selftest: $PASS passed, $FAIL failed"
((FAIL == 0))
