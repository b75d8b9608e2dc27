# shellcheck shell=bash
# Checks of the GPU run kit, sourced by run.sh and selftest.sh (bash).
#
# kit_vulkan_setup does what found the GPU of a bare NVIDIA machine (an H200, 2026-11-28):
# Debian's Vulkan loader and glvnd libraries unpacked into / with dpkg -x and ldconfig, the
# driver's folders on LD_LIBRARY_PATH and its ICD named by VK_DRIVER_FILES. The checks after
# it print one line per finding ("ok", "MISSING", "note") and return non-zero when what they
# check is missing; they may export LD_LIBRARY_PATH, VK_DRIVER_FILES and VK_ICD_FILENAMES so
# that the binary finds what the kit found. Overrides (for selftest.sh, or to point the kit
# somewhere else):
#   KIT_DEB_DIR            the .deb files of the recipe (default: $KIT_DIR/debs)
#   KIT_UNPACK_ROOT        where root unpacks them (default: /)
#   KIT_IS_ROOT            1 or 0 (default: from id -u)
#   KIT_NVIDIA_DIR         the driver's folder (default: /usr/local/nvidia)
#   KIT_ICD_DIRS           folders searched for ICD JSON files (colon-separated)
#   KIT_STANDARD_ICD_DIRS  the folders the loader searches by itself (colon-separated)
#   KIT_DRIVER_LIB_DIRS    folders searched for a driver library named without a path
#   KIT_WORK               where a generated ICD JSON or a non-root unpack goes (default: a
#                          temporary folder)

KIT_DIR=${KIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
KIT_DEB_DIR=${KIT_DEB_DIR:-$KIT_DIR/debs}
KIT_UNPACK_ROOT=${KIT_UNPACK_ROOT:-/}
KIT_NVIDIA_DIR=${KIT_NVIDIA_DIR:-/usr/local/nvidia}
KIT_STANDARD_ICD_DIRS=${KIT_STANDARD_ICD_DIRS:-/etc/vulkan/icd.d:/usr/local/etc/vulkan/icd.d:/usr/share/vulkan/icd.d:/usr/local/share/vulkan/icd.d}
KIT_ICD_DIRS=${KIT_ICD_DIRS:-$KIT_STANDARD_ICD_DIRS:$KIT_NVIDIA_DIR/share/vulkan/icd.d:$KIT_NVIDIA_DIR/etc/vulkan/icd.d:$KIT_NVIDIA_DIR/icd.d:/etc/nvidia/vulkan/icd.d}
KIT_DRIVER_LIB_DIRS=${KIT_DRIVER_LIB_DIRS:-$KIT_NVIDIA_DIR/lib64:$KIT_NVIDIA_DIR/lib:/usr/lib/x86_64-linux-gnu:/usr/lib64:/usr/lib:/lib/x86_64-linux-gnu}

# The recipe's Debian packages (pack.sh fetches them) and the library each provides.
KIT_GL_PACKAGES=(libvulkan1:libvulkan.so.1 libegl1:libEGL.so.1 libglvnd0:libGLdispatch.so.0
    libopengl0:libOpenGL.so.0 libgl1:libGL.so.1 libglx0:libGLX.so.0 libgles2:libGLESv2.so.2)

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

# Whether the dynamic linker finds library $1 (a bare name) by itself: in a folder of
# LD_LIBRARY_PATH or in the ldconfig cache.
kit_linker_has() {
    local dir IFS=:
    for dir in ${LD_LIBRARY_PATH:-}; do
        [[ -n $dir && -e $dir/$1 ]] && return 0
    done
    unset IFS
    ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {found = 1} END {exit !found}'
}

# Unpacks the .deb $1 into folder $2: dpkg -x, or ar and tar where dpkg is absent.
kit_unpack_deb() {
    if command -v dpkg >/dev/null 2>&1; then
        dpkg -x "$1" "$2"
        return
    fi
    local member
    member=$(ar t "$1" 2>/dev/null | grep '^data\.tar') || return 1
    mkdir -p "$2" && ar p "$1" "$member" | tar -x -a -f - -C "$2" 2>/dev/null ||
        ar p "$1" "$member" | tar -x -J -C "$2" 2>/dev/null ||
        ar p "$1" "$member" | tar -x -z -C "$2"
}

# Prepends the folders of $1 (colon-separated) that exist to LD_LIBRARY_PATH.
kit_add_existing_lib_dirs() {
    local dir IFS=:
    for dir in $1; do
        [[ -d $dir ]] && kit_add_lib_dir "$dir"
    done
}

# The recipe that found the GPU of a bare NVIDIA machine. For each of the recipe's libraries
# this machine lacks, its package is unpacked: as root with dpkg -x into / (then ldconfig),
# which is what worked; otherwise into $KIT_WORK/vulkan-root, used through LD_LIBRARY_PATH
# (which did NOT find the H200's GPU: say so). Then the NVIDIA driver's library folders go on
# LD_LIBRARY_PATH and its ICD into VK_DRIVER_FILES and VK_ICD_FILENAMES, where they exist.
kit_vulkan_setup() {
    local entry pkg lib missing=() debs=() deb root=$KIT_UNPACK_ROOT
    local is_root=${KIT_IS_ROOT:-$([[ $(id -u) == 0 ]] && echo 1 || echo 0)}
    for entry in "${KIT_GL_PACKAGES[@]}"; do
        pkg=${entry%%:*} lib=${entry#*:}
        kit_linker_has "$lib" && continue
        missing+=("$lib")
        for deb in "$KIT_DEB_DIR/${pkg}"_*.deb; do
            [[ -e $deb ]] && debs+=("$deb") && break
        done
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        kit_ok "Vulkan loader and GL dispatch libraries: all on this machine"
    elif [[ ${#debs[@]} -eq 0 ]]; then
        kit_missing "this machine lacks ${missing[*]} and the kit has no packages for them in $KIT_DEB_DIR (pack.sh fetches them)"
    else
        if [[ $is_root != 1 ]]; then
            root=${KIT_WORK:-$(mktemp -d)}/vulkan-root
            kit_note "not root: the packages go into $root, used through LD_LIBRARY_PATH (on the H200 only their install into / as root found the GPU)"
        fi
        mkdir -p "$root"
        for deb in "${debs[@]}"; do
            if ! kit_unpack_deb "$deb" "$root"; then
                kit_missing "could not unpack $deb into $root"
            fi
        done
        if [[ $root == / ]]; then
            ldconfig 2>/dev/null || kit_note "ldconfig failed"
        else
            kit_add_existing_lib_dirs "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
        fi
        kit_ok "unpacked $(basename -a "${debs[@]}" | sed 's/_.*//' | tr '\n' ' ')into $root for ${missing[*]}"
    fi
    kit_add_existing_lib_dirs "$KIT_NVIDIA_DIR/lib:$KIT_NVIDIA_DIR/lib64"
    local icd=$KIT_NVIDIA_DIR/share/vulkan/icd.d/nvidia_icd.json
    if [[ -z ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}} && -e $icd ]]; then
        kit_use_icd "$icd"
    fi
    local egl=$KIT_NVIDIA_DIR/share/glvnd/egl_vendor.d/10_nvidia.json
    if [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -e $egl ]]; then
        export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
    fi
    return 0
}

# libvulkan.so.1, where the dynamic linker finds it (after kit_vulkan_setup).
check_loader() {
    if kit_linker_has libvulkan.so.1; then
        kit_ok "Vulkan loader: libvulkan.so.1 ($(kit_resolve_lib libvulkan.so.1))"
        return 0
    fi
    kit_missing "Vulkan loader: no libvulkan.so.1 (ldconfig -p, LD_LIBRARY_PATH); install libvulkan1, run the kit as root, or re-pack it (pack.sh fetches the package)"
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
    local file
    file=$work/kit_nvidia_icd_$(basename "$1" | cut -d. -f1).json
    printf '{\n  "file_format_version": "1.0.0",\n  "ICD": {"library_path": "%s", "api_version": "1.3.0"}\n}\n' "$1" >"$file"
    echo "$file"
}

# Checks that an ICD's driver library loads (present, dependencies found). Returns non-zero
# if it cannot.
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

# python3 and the peers' packages. Sets KIT_HAVE_NUMPY, KIT_HAVE_SKLEARN, KIT_HAVE_TORCH_CUDA
# (read by run.sh).
# shellcheck disable=SC2034
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
