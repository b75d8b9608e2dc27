# Checks of the GPU run kit, sourced by run.sh and selftest.sh (bash).
#
# Each check prints one line per finding ("ok", "MISSING", "note") and returns non-zero when
# what it checks is missing. They may export LD_LIBRARY_PATH, VK_DRIVER_FILES and
# VK_ICD_FILENAMES so that the binary finds what the kit found. Overrides (for selftest.sh,
# or to point the kit somewhere else):
#   KIT_SYSTEM_LOADER      path of the system's libvulkan.so.1, or "none" (default: ldconfig -p)
#   KIT_LOADER_DIR         folder with the kit's copy of the loader (default: $KIT_DIR/vulkan)
#   KIT_ICD_DIRS           folders searched for ICD JSON files (colon-separated)
#   KIT_STANDARD_ICD_DIRS  the folders the loader searches by itself (colon-separated)
#   KIT_DRIVER_LIB_DIRS    folders searched for a driver library named without a path
#   KIT_WORK               where a generated ICD JSON is written (default: a temporary folder)

KIT_DIR=${KIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
KIT_LOADER_DIR=${KIT_LOADER_DIR:-$KIT_DIR/vulkan}
KIT_STANDARD_ICD_DIRS=${KIT_STANDARD_ICD_DIRS:-/etc/vulkan/icd.d:/usr/local/etc/vulkan/icd.d:/usr/share/vulkan/icd.d:/usr/local/share/vulkan/icd.d}
KIT_ICD_DIRS=${KIT_ICD_DIRS:-$KIT_STANDARD_ICD_DIRS:/usr/local/nvidia/share/vulkan/icd.d:/usr/local/nvidia/etc/vulkan/icd.d:/usr/local/nvidia/icd.d:/etc/nvidia/vulkan/icd.d}
KIT_DRIVER_LIB_DIRS=${KIT_DRIVER_LIB_DIRS:-/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/lib:/lib/x86_64-linux-gnu}

kit_ok() { echo "  ok       $*"; }
kit_missing() { echo "  MISSING  $*"; }
kit_note() { echo "  note     $*"; }

# Prepends a folder to LD_LIBRARY_PATH once.
kit_add_lib_dir() {
    case ":${LD_LIBRARY_PATH:-}:" in
        *":$1:"*) ;;
        *) export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
}

# Where the dynamic linker would find library $1 (a bare name): LD_LIBRARY_PATH, the ldconfig
# cache, then KIT_DRIVER_LIB_DIRS (such a folder is added to LD_LIBRARY_PATH). Prints the path.
kit_resolve_lib() {
    local name=$1 dir
    if [[ $name == */* ]]; then
        [[ -e $name ]] && echo "$name"
        return
    fi
    local IFS=:
    for dir in ${LD_LIBRARY_PATH:-}; do
        [[ -n $dir && -e $dir/$name ]] && { echo "$dir/$name"; return; }
    done
    unset IFS
    local cached
    cached=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64|x86_64|64bit/ {print $NF; exit}')
    [[ -z $cached ]] && cached=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')
    [[ -n $cached ]] && { echo "$cached"; return; }
    IFS=:
    for dir in $KIT_DRIVER_LIB_DIRS; do
        [[ -n $dir && -e $dir/$name ]] && { echo "$dir/$name"; return; }
    done
}

# The libraries $1 needs that the dynamic linker cannot find (one per line).
kit_missing_deps() {
    ldd "$1" 2>/dev/null | awk '/not found/ {print $1}'
}

# The program itself: present, runnable, its libraries and C library version.
check_binary() {
    local bin=$1
    if [[ ! -e $bin ]]; then
        kit_missing "our binary: $bin does not exist (build the kit with pack.sh on a machine with Rust)"
        return 1
    fi
    if [[ ! -x $bin ]]; then
        kit_missing "our binary: $bin is not executable (chmod +x it)"
        return 1
    fi
    local missing
    missing=$(kit_missing_deps "$bin" | tr '\n' ' ')
    if [[ -n $missing ]]; then
        kit_missing "our binary needs libraries this machine lacks: $missing"
        return 1
    fi
    local need have
    need=$(sed -n 's/^glibc_required=//p' "$KIT_DIR/MANIFEST" 2>/dev/null)
    have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
    if [[ -n $need && -n $have ]] &&
        [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
        kit_missing "our binary needs glibc >= $need, this machine has $have (pack on an older distribution)"
        return 1
    fi
    kit_ok "our binary: $bin${have:+ (glibc $have${need:+, needs $need})}"
}

# libvulkan.so.1: on LD_LIBRARY_PATH or in the ldconfig cache, else the kit's copy.
check_loader() {
    local sys=${KIT_SYSTEM_LOADER:-}
    if [[ -z $sys ]]; then
        sys=$(kit_resolve_lib libvulkan.so.1)
        case $sys in "$KIT_LOADER_DIR"/*) sys= ;; esac
    fi
    if [[ -n $sys && $sys != none ]]; then
        kit_ok "Vulkan loader: $sys (this machine's)"
        return 0
    fi
    if [[ -e $KIT_LOADER_DIR/libvulkan.so.1 ]]; then
        kit_add_lib_dir "$KIT_LOADER_DIR"
        kit_ok "Vulkan loader: $KIT_LOADER_DIR/libvulkan.so.1 (the kit's copy, through LD_LIBRARY_PATH)"
        return 0
    fi
    kit_missing "Vulkan loader: no libvulkan.so.1 on this machine (ldconfig -p, LD_LIBRARY_PATH) nor in $KIT_LOADER_DIR; install libvulkan1 or re-pack the kit (pack.sh copies one)"
    return 1
}

# The driver library an ICD JSON names.
kit_icd_library() {
    sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -1
}

kit_in_standard_dir() {
    local dir=${1%/*} d IFS=:
    for d in $KIT_STANDARD_ICD_DIRS ${XDG_DATA_DIRS:-/usr/local/share:/usr/share}; do
        [[ $dir == "${d%/}" || $dir == "${d%/}/vulkan/icd.d" ]] && return 0
    done
    return 1
}

# Writes an ICD JSON for driver library $1 into KIT_WORK and prints its path.
kit_write_icd() {
    local work=${KIT_WORK:-$(mktemp -d)}
    mkdir -p "$work"
    local file=$work/kit_nvidia_icd_$(basename "$1" | cut -d. -f1).json
    printf '{\n  "file_format_version": "1.0.0",\n  "ICD": {"library_path": "%s", "api_version": "1.3.0"}\n}\n' "$1" >"$file"
    echo "$file"
}

# Checks that an ICD's driver library loads (present, dependencies found; the kit's extra
# libraries are added when they supply a missing one). Returns non-zero if it cannot.
kit_check_driver_library() {
    local json=$1 lib path missing
    lib=$(kit_icd_library "$json")
    if [[ -z $lib ]]; then
        kit_missing "ICD $json names no library_path"
        return 1
    fi
    path=$(kit_resolve_lib "$lib")
    if [[ -z $path ]]; then
        kit_missing "ICD $json: its driver library $lib is not on this machine (ldconfig -p, LD_LIBRARY_PATH, $KIT_DRIVER_LIB_DIRS)"
        return 1
    fi
    [[ $lib != */* && -z $(ldconfig -p 2>/dev/null | awk -v n="$lib" '$1 == n') ]] &&
        kit_add_lib_dir "$(dirname "$path")"
    missing=$(kit_missing_deps "$path" | tr '\n' ' ')
    if [[ -n $missing && -d $KIT_LOADER_DIR/extra ]]; then
        kit_add_lib_dir "$KIT_LOADER_DIR/extra"
        kit_note "driver library $path lacked: $missing; using the kit's copies in $KIT_LOADER_DIR/extra"
        missing=$(kit_missing_deps "$path" | tr '\n' ' ')
    fi
    if [[ -n $missing ]]; then
        kit_missing "driver library $path cannot load, it needs: $missing"
        return 1
    fi
    # NVIDIA's driver opens its SPIR-V compiler at run time (ldd cannot see it).
    local real version
    real=$(readlink -f "$path")
    version=${real##*.so.}
    if [[ $real == *_nvidia.so.* && $version == *.*.* ]] &&
        [[ ! -e ${real%/*}/libnvidia-glvkspirv.so.$version ]] &&
        [[ -z $(kit_resolve_lib "libnvidia-glvkspirv.so.$version") ]]; then
        kit_missing "NVIDIA driver $version: libnvidia-glvkspirv.so.$version is absent (the driver needs it to compile shaders)"
        return 1
    fi
    kit_ok "driver library: $path${version:+ ($real)}"
}

# Exports VK_DRIVER_FILES and VK_ICD_FILENAMES (older loaders read the second) as $1.
kit_use_icd() {
    export VK_DRIVER_FILES=$1 VK_ICD_FILENAMES=$1
}

# A Vulkan ICD: the one VK_DRIVER_FILES / VK_ICD_FILENAMES name, else NVIDIA's among the
# known folders (exported when it lies where the loader does not look), else one written for
# an NVIDIA driver library found without its JSON; else any other ICD (software ones noted).
check_icd() {
    local given=${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}} f files=() nvidia=() other=() IFS=:
    if [[ -n $given ]]; then
        for f in $given; do
            if [[ -d $f ]]; then
                files+=("$f"/*.json)
            elif [[ -e $f ]]; then
                files+=("$f")
            else
                kit_missing "ICD: VK_DRIVER_FILES/VK_ICD_FILENAMES names $f, which does not exist"
            fi
        done
        unset IFS
        [[ ${#files[@]} -eq 0 || ! -e ${files[0]} ]] && return 1
        kit_ok "ICD: ${files[*]} (from VK_DRIVER_FILES/VK_ICD_FILENAMES)"
        kit_check_driver_library "${files[0]}"
        return
    fi
    for f in $KIT_ICD_DIRS; do
        [[ -d $f ]] || continue
        for json in "$f"/*.json; do
            [[ -e $json ]] || continue
            if grep -qi nvidia "$json" || [[ $json == *[Nn][Vv][Ii][Dd][Ii][Aa]* ]]; then
                nvidia+=("$json")
            else
                other+=("$json")
            fi
        done
    done
    unset IFS
    local json
    for json in "${nvidia[@]}"; do
        if ! kit_in_standard_dir "$json"; then
            kit_use_icd "$json"
            kit_ok "ICD: $json (NVIDIA, outside the loader's folders: VK_DRIVER_FILES set)"
        else
            kit_ok "ICD: $json (NVIDIA)"
        fi
        if kit_check_driver_library "$json"; then
            return 0
        fi
        # libGLX_nvidia needs X libraries a headless box may lack; libEGL_nvidia is the same
        # Vulkan driver without them.
        local egl
        egl=$(kit_resolve_lib libEGL_nvidia.so.0)
        if [[ -n $egl ]]; then
            json=$(kit_write_icd "$egl")
            kit_use_icd "$json"
            kit_note "trying NVIDIA's EGL library instead: wrote $json"
            kit_check_driver_library "$json" && return 0
        fi
        return 1
    done
    local lib path
    for lib in libGLX_nvidia.so.0 libEGL_nvidia.so.0; do
        path=$(kit_resolve_lib "$lib")
        [[ -n $path ]] || continue
        json=$(kit_write_icd "$path")
        kit_use_icd "$json"
        kit_note "no NVIDIA ICD JSON in $KIT_ICD_DIRS, but the driver library $path is here: wrote $json"
        kit_check_driver_library "$json" && return 0
    done
    if [[ ${#other[@]} -gt 0 ]]; then
        local soft=""
        grep -qiE 'lvp|swiftshader|llvmpipe' "${other[@]}" && soft=" (includes a software rasteriser: without a GPU's ICD, ours runs on the CPU)"
        kit_note "no NVIDIA ICD; other ICDs: ${other[*]}$soft"
        return 0
    fi
    kit_missing "ICD: no Vulkan driver JSON in $KIT_ICD_DIRS and no NVIDIA driver library in $KIT_DRIVER_LIB_DIRS; set VK_DRIVER_FILES=/path/to/nvidia_icd.json"
    return 1
}

# The GPU as the NVIDIA driver sees it (information only).
check_gpu() {
    if command -v nvidia-smi >/dev/null 2>&1; then
        local gpus
        gpus=$(nvidia-smi -L 2>/dev/null | head -4 | tr '\n' ';')
        if [[ -n $gpus ]]; then
            kit_ok "nvidia-smi: $gpus"
        else
            kit_note "nvidia-smi is here but lists no GPU"
        fi
    else
        kit_note "no nvidia-smi (not needed)"
    fi
}

# python3 and the peers' packages. Sets KIT_HAVE_NUMPY, KIT_HAVE_SKLEARN, KIT_HAVE_TORCH_CUDA.
check_python() {
    KIT_HAVE_NUMPY=0 KIT_HAVE_SKLEARN=0 KIT_HAVE_TORCH_CUDA=0
    local py=${KIT_PYTHON:-python3} v
    if ! command -v "$py" >/dev/null 2>&1; then
        kit_missing "python3: not found; no data preparation and no peers (ours still runs, on synthetic shapes)"
        return 1
    fi
    if v=$("$py" -c 'import numpy; print(numpy.__version__)' 2>/dev/null); then
        KIT_HAVE_NUMPY=1
        kit_ok "numpy $v"
    else
        kit_missing "numpy: not importable by $py; no data preparation and no peers"
        return 1
    fi
    if v=$("$py" -c 'import sklearn, threadpoolctl; print(sklearn.__version__)' 2>/dev/null); then
        KIT_HAVE_SKLEARN=1
        kit_ok "scikit-learn $v"
    else
        kit_note "scikit-learn or threadpoolctl: not importable; the scikit-learn peer is skipped"
    fi
    if v=$("$py" -c 'import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "")' 2>/dev/null); then
        if [[ $v == *" True "* ]]; then
            KIT_HAVE_TORCH_CUDA=1
            kit_ok "torch ${v%% *} with CUDA: ${v#* True }"
        else
            kit_note "torch ${v%% *} sees no CUDA device; the torch peer runs on the CPU"
        fi
    else
        kit_note "torch: not importable; the torch peer is skipped"
    fi
    "$py" -c 'import faiss' 2>/dev/null && kit_ok "faiss (its K-Means runs too)"
    return 0
}
