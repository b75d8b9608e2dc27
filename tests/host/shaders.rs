//! The shaders without a GPU: every kernel composed from its `#import`s with the same code as
//! `build.rs`, validated by naga, and compiled to SPIR-V per entry point for every override
//! value the host may pick; the pieces in `shaders/shared/` validate on their own and are
//! really shared; the layout rules (one wrapper per kernel, only host-chosen sizes as
//! overrides); and the composer itself (imports once, transitively, cycles and unknown pieces
//! as errors, errors pointing at the original file and line).

#[path = "../../build/compose.rs"]
mod compose;
#[path = "../../build/reflect.rs"]
mod reflect;

use std::path::{Path, PathBuf};

use compose::{compose, ComposeError, Composed};

/// The overrides the host sets: the workgroup size of the kernels that stride over a row's
/// features (a power of two from FEATURE_WG_MIN to FEATURE_WG_MAX), and the tile core's
/// shape (shared/gemm.wgsl: invocations per tile edge 8 or 16, register block edges 4 or 8;
/// src/kernels/primitives/gemm.rs picks among GemmConfig::ALL, which the GPU tests run).
const FEATURE_WG_SIZE: &str = "FEATURE_WG_SIZE";
const GEMM_OVERRIDES: [&str; 6] = [
    "GEMM_LANES_M",
    "GEMM_LANES_N",
    "GEMM_RM",
    "GEMM_RN",
    "GEMM_DEPTH",
    "GEMM_STAGE_VEC4S",
];
/// The uniform pair kernels' shape, fixed per pipeline so that their loops unroll
/// (src/kernels/primitives/pairs.rs): vec4s per padded row, 1 to UNIFORM_MAX_D4, and the
/// neighbour lists' length, 1 to KNN_UNIFORM_MAX_K (src/kernels/neighbors/knn.rs).
const PAIR_D4: &str = "PAIR_D4";
const KNN_K: &str = "KNN_K";
/// The uniform diagonal E-step's vec4s per padded row, 1 to ESTEP_MAX_D4, and rows per
/// invocation, 1 to ESTEP_MAX_ROWS (src/kernels/mixture/estep.rs).
const ESTEP_D4: &str = "ESTEP_D4";
const ESTEP_ROWS: &str = "ESTEP_ROWS";
/// The small-K normalisation's K, 1 to NORMALIZE_MAX_K (src/kernels/mixture/estep.rs).
const NORMALIZE_K: &str = "NORMALIZE_K";
/// Whether the centroid update's segments read a weight per row, false or true
/// (src/kernels/centroids/update.rs).
const SEGMENT_WEIGHTED: &str = "SEGMENT_WEIGHTED";
/// The small-K streamed assignment's K, 1 to SMALL_K (src/kernels/assign/stream.rs).
const STREAM_K: &str = "STREAM_K";
/// Blocks of 8 candidates per pass of the texture assignment, 1 or 2
/// (src/kernels/assign/texture.rs).
const TEXTURE_BLOCKS: &str = "TEXTURE_BLOCKS";
/// Invocations along the components of the tiled diagonal E-step's and moments' tiles, 4, 8
/// or 16 (src/kernels/mixture/estep_tiled.rs and mstep.rs pick them from K and D).
const ET_LANES_C: &str = "ET_LANES_C";
const MOMENTS_LANES_C: &str = "MOMENTS_LANES_C";
/// The packed triangles' length p(p+1)/2 of the Cholesky factorisation in workgroup memory,
/// for the block's p columns (src/kernels/linalg/cholesky_qr.rs: p up to what the device's
/// workgroup memory holds).
const TRI_LEN: &str = "TRI_LEN";

/// Whether the workgroup size of an entry point with these overrides is the host's choice.
fn host_sized(overrides: &[String]) -> bool {
    overrides
        .iter()
        .any(|o| o == FEATURE_WG_SIZE || o == "GEMM_LANES_M" || o == "GEMM_LANES_N")
}

fn shader_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders")
}

fn kernel_files() -> Vec<compose::ShaderFile> {
    let files = compose::kernel_files(&shader_dir()).expect("shaders/ exists");
    assert!(
        files.len() >= 20 && files.iter().filter(|f| f.family.is_some()).count() >= 15,
        "expected the kernel families, found {files:?}"
    );
    files
}

fn kernels() -> Vec<PathBuf> {
    kernel_files().into_iter().map(|f| f.path).collect()
}

fn piece_files() -> Vec<compose::ShaderFile> {
    let files = compose::piece_files(&shader_dir()).expect("shaders/shared exists");
    assert!(files.iter().any(|f| f.family.is_none()) && files.iter().any(|f| f.family.is_some()));
    files
}

fn pieces() -> Vec<PathBuf> {
    piece_files().into_iter().map(|f| f.path).collect()
}

/// Composed and validated, or a panic with the line-mapped error.
fn validated(path: &Path) -> (Composed, naga::Module, naga::valid::ModuleInfo) {
    let composed = compose(&shader_dir(), path).unwrap_or_else(|e| panic!("{e}"));
    let (module, info) =
        reflect::validate(&path.display().to_string(), &composed).unwrap_or_else(|e| panic!("{e}"));
    (composed, module, info)
}

fn constant(reflection: &reflect::Reflection, name: &str) -> u32 {
    reflection
        .constants
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no const {name}"))
        .1
}

/// The values the host may give `name`: every power of two from FEATURE_WG_MIN to
/// FEATURE_WG_MAX (kernels::feature_wg_size picks among them); the tile core's shapes; every
/// padded row width of the uniform affinity kernels, and list lengths at
/// both ends of their range and between.
fn host_values(reflection: &reflect::Reflection, name: &str) -> Vec<u32> {
    let prefix = match name {
        "GEMM_LANES_M" | "GEMM_LANES_N" => return vec![8, 16],
        "GEMM_RM" | "GEMM_RN" => return vec![4, 8],
        "GEMM_DEPTH" => return vec![8, 16],
        // GEMM_DEPTH padded tile rows (the host gives both together).
        "GEMM_STAGE_VEC4S" => {
            let row = constant(reflection, "GEMM_ROW_VEC4S");
            return vec![8 * row, 16 * row];
        }
        FEATURE_WG_SIZE => "FEATURE_WG",
        PAIR_D4 => return (1..=constant(reflection, "UNIFORM_MAX_D4")).collect(),
        ESTEP_D4 => return (1..=constant(reflection, "ESTEP_MAX_D4")).collect(),
        ESTEP_ROWS => return (1..=constant(reflection, "ESTEP_MAX_ROWS")).collect(),
        NORMALIZE_K => return (1..=constant(reflection, "NORMALIZE_MAX_K")).collect(),
        SEGMENT_WEIGHTED => return vec![0, 1],
        STREAM_K => return (1..=constant(reflection, "SMALL_K")).collect(),
        TEXTURE_BLOCKS => return vec![1, 2],
        TRI_LEN => return [1u32, 2, 7, 64, 100, 110].map(|p| p * (p + 1) / 2).to_vec(),
        ET_LANES_C | MOMENTS_LANES_C => return vec![4, 8, 16],
        KNN_K => {
            let max = constant(reflection, "KNN_UNIFORM_MAX_K");
            return vec![1, 2, 10, max];
        }
        _ => panic!("no host choice is known for override {name}"),
    };
    let (min, max) = (
        constant(reflection, &format!("{prefix}_MIN")),
        constant(reflection, &format!("{prefix}_MAX")),
    );
    assert!(min.is_power_of_two() && max.is_power_of_two() && min <= max);
    std::iter::successors(Some(min), |w| Some(w * 2))
        .take_while(|&w| w <= max)
        .collect()
}

fn spirv(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    entry: &str,
    constants: &naga::back::PipelineConstants,
) -> Result<Vec<u32>, String> {
    let (resolved, resolved_info) = naga::back::pipeline_constants::process_overrides(
        module,
        info,
        Some((naga::ShaderStage::Compute, entry)),
        constants,
    )
    .map_err(|e| e.to_string())?;
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: entry.to_string(),
    };
    let options = naga::back::spv::Options::default();
    naga::back::spv::write_vec(&resolved, &resolved_info, &options, Some(&pipeline))
        .map_err(|e| e.to_string())
}

#[test]
fn every_kernel_composes_validates_and_compiles_per_entry_point_and_override_value() {
    for path in kernels() {
        let (_, module, info) = validated(&path);
        let reflection = reflect::reflect(&module, &info).unwrap();
        assert!(
            !reflection.entries.is_empty(),
            "{} has no entry point",
            path.display()
        );
        for entry in &reflection.entries {
            let mut choices = vec![naga::back::PipelineConstants::default()];
            for name in &entry.overrides {
                choices = choices
                    .into_iter()
                    .flat_map(|c| {
                        host_values(&reflection, name).into_iter().map(move |v| {
                            let mut c = c.clone();
                            c.insert(name.clone(), v as f64);
                            c
                        })
                    })
                    .collect();
            }
            for constants in &choices {
                let words = spirv(&module, &info, &entry.name, constants).unwrap_or_else(|e| {
                    panic!("{} {} {constants:?}: {e}", path.display(), entry.name)
                });
                assert!(words.len() > 10);
            }
        }
    }
}

#[test]
fn only_sizes_the_host_chooses_are_overrides() {
    let mut overridden = 0;
    for path in kernels() {
        let (_, module, info) = validated(&path);
        let reflection = reflect::reflect(&module, &info).unwrap();
        for entry in &reflection.entries {
            let shown = format!("{} {}", path.display(), entry.name);
            for name in &entry.overrides {
                assert!(
                    name == FEATURE_WG_SIZE
                        || name == PAIR_D4
                        || name == KNN_K
                        || name == ESTEP_D4
                        || name == ESTEP_ROWS
                        || name == NORMALIZE_K
                        || name == SEGMENT_WEIGHTED
                        || name == STREAM_K
                        || name == TEXTURE_BLOCKS
                        || name == ET_LANES_C
                        || name == MOMENTS_LANES_C
                        || name == TRI_LEN
                        || GEMM_OVERRIDES.contains(&name.as_str()),
                    "{shown}: `{name}` is an override the host never sets; make it a const"
                );
            }
            // The tile core's overrides come together: the host sets all six.
            let gemm = entry
                .overrides
                .iter()
                .filter(|o| GEMM_OVERRIDES.contains(&o.as_str()))
                .count();
            assert!(
                gemm == 0 || gemm == GEMM_OVERRIDES.len(),
                "{shown}: {:?}",
                entry.overrides
            );
            // A fixed workgroup size unless the host picks it.
            let host_sized = host_sized(&entry.overrides);
            assert_eq!(entry.workgroup_size.is_none(), host_sized, "{shown}");
            overridden += usize::from(host_sized);
            // Exactly one uniform: the parameter struct the wrapper passes.
            let uniforms = entry
                .bindings
                .iter()
                .filter(|b| matches!(b.kind, reflect::Kind::Uniform { .. }))
                .count();
            assert_eq!(uniforms, 1, "{shown}");
        }
    }
    // accumulate_cluster_partials, column_moments and the tiled kernels.
    assert!(overridden >= 4, "{overridden}");
}

#[test]
fn every_piece_validates_on_its_own_and_is_imported_by_a_kernel() {
    let sources: Vec<String> = kernels()
        .iter()
        .map(|k| compose(&shader_dir(), k).unwrap().source)
        .collect();
    for piece in pieces() {
        let (_, module, info) = validated(&piece);
        assert!(
            module.entry_points.is_empty(),
            "{} is shared code, not a kernel",
            piece.display()
        );
        reflect::reflect(&module, &info).unwrap();
        let name = compose::piece_name(&shader_dir(), &piece).unwrap();
        let marker = format!("#import {name} (");
        assert!(
            sources.iter().any(|s| s.contains(&marker)),
            "no kernel imports {}",
            piece.display()
        );
    }
}

#[test]
fn shared_code_is_written_once() {
    // The grid index, the register-block loop and the tiles live in shaders/shared/.
    for path in kernels() {
        let text = std::fs::read_to_string(&path).unwrap();
        for copy in [
            "wid.y *",
            "fma(av[i]",
            "var<workgroup> a_tile",
            "override WG_SIZE",
        ] {
            assert!(
                !text.contains(copy),
                "{} has its own copy of `{copy}`",
                path.display()
            );
        }
    }
}

#[test]
fn every_shader_has_a_same_named_host_wrapper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wrapper_of = |family: &Option<String>, stem: &str| match family {
        Some(f) => root.join("src/kernels").join(f).join(format!("{stem}.rs")),
        None => root.join("src/kernels").join(format!("{stem}.rs")),
    };
    for file in kernel_files() {
        let wrapper = wrapper_of(&file.family, &file.stem);
        assert!(
            wrapper.exists(),
            "{} has no wrapper {}",
            file.path.display(),
            wrapper.display()
        );
        let text = std::fs::read_to_string(&wrapper).unwrap();
        assert!(
            text.contains(&file.relative()),
            "{} does not name its shader {}",
            wrapper.display(),
            file.relative()
        );
    }
    // Pieces are not kernels: no wrapper of their name in their family's folder.
    for piece in piece_files() {
        let wrapper = wrapper_of(&piece.family, &piece.stem);
        assert!(
            piece.family.is_none() || !wrapper.exists(),
            "{} is not a kernel",
            wrapper.display()
        );
    }
    // Every family folder of shaders/ has its folder of wrappers, and back.
    for entry in std::fs::read_dir(shader_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.is_dir() && name != "shared" {
            assert!(
                root.join("src/kernels").join(&name).join("mod.rs").exists(),
                "shaders/{name}/ has no src/kernels/{name}/"
            );
        }
    }
}

#[test]
fn every_kernel_declares_its_runtime_checks_with_a_reason() {
    let mut trusted = 0;
    for path in kernels() {
        let text = std::fs::read_to_string(&path).unwrap();
        let checks =
            compose::runtime_checks(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        trusted += usize::from(checks.trusted);
    }
    assert!(trusted > 10, "{trusted} trusted kernels");
    // The declaration is one line with a reason: none, two, or an empty reason are errors.
    assert!(compose::runtime_checks("// a kernel\nfn f() {}\n").is_err());
    assert!(compose::runtime_checks("// @trusted:\n").is_err());
    assert!(
        compose::runtime_checks("// @trusted: a reason here\n// @checked: and here\n").is_err()
    );
    let ok = compose::runtime_checks("// x\n// @checked: it reads labels as indices\n").unwrap();
    assert!(!ok.trusted && ok.reason == "it reads labels as indices");
}

#[test]
fn no_shader_is_longer_than_650_lines() {
    for path in kernels().into_iter().chain(pieces()) {
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines <= 650, "{} has {lines} lines", path.display());
    }
}

/// A scratch `shaders/` tree with the given files (path relative to it, text).
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compose-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
    dir
}

#[test]
fn imports_expand_once_transitively_with_a_line_map() {
    let dir = scratch(
        "once",
        &[
            ("k.wgsl", "#import b\n#import a\nconst K: u32 = A + B;\n"),
            ("shared/a.wgsl", "// a\nconst A: u32 = 1u;\n"),
            ("shared/b.wgsl", "#import a\nconst B: u32 = A;\n"),
        ],
    );
    let c = compose(&dir, &dir.join("k.wgsl")).unwrap();
    assert_eq!(c.source.matches("const A: u32").count(), 1, "{}", c.source);
    assert!(c.source.contains("// #import a (already imported)"));
    let at = |needle: &str| {
        let line = c.source[..c.source.find(needle).unwrap()]
            .matches('\n')
            .count()
            + 1;
        let o = c.origin(line).unwrap();
        (o.file.strip_prefix(&dir).unwrap().to_path_buf(), o.line)
    };
    assert_eq!(at("const A"), (PathBuf::from("shared/a.wgsl"), 2));
    assert_eq!(at("const B"), (PathBuf::from("shared/b.wgsl"), 2));
    assert_eq!(at("const K"), (PathBuf::from("k.wgsl"), 3));
    assert_eq!(c.files.len(), 3);
    let (module, _) = reflect::validate("k.wgsl", &c).unwrap();
    assert_eq!(module.constants.len(), 3);
}

#[test]
fn a_family_imports_its_own_pieces_and_the_shared_ones() {
    let dir = scratch("family", &[("shared/g.wgsl", "const G: u32 = 1u;\n")]);
    std::fs::create_dir_all(dir.join("fam/shared")).unwrap();
    std::fs::write(
        dir.join("fam/k.wgsl"),
        "#import fam/p\n#import g\nconst K: u32 = P + G;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("fam/shared/p.wgsl"),
        "#import g\nconst P: u32 = G;\n",
    )
    .unwrap();
    std::fs::write(dir.join("fam/shared/q.wgsl"), "#import fam/q\n").unwrap();
    let c = compose(&dir, &dir.join("fam/k.wgsl")).unwrap();
    assert!(
        c.source.contains("// #import fam/p (fam/shared/p.wgsl)"),
        "{}",
        c.source
    );
    assert_eq!(c.source.matches("const G: u32").count(), 1, "{}", c.source);
    reflect::validate("fam/k.wgsl", &c).unwrap();
    // The listing: kernels by family, pieces shared and per family.
    let kernels = compose::kernel_files(&dir).unwrap();
    assert_eq!(kernels.len(), 1);
    assert_eq!(
        (kernels[0].ident(), kernels[0].relative()),
        ("fam_k".to_string(), "fam/k.wgsl".to_string())
    );
    let pieces: Vec<String> = compose::piece_files(&dir)
        .unwrap()
        .iter()
        .map(|p| compose::piece_name(&dir, &p.path).unwrap())
        .collect();
    assert_eq!(pieces, ["g", "fam/p", "fam/q"]);
    // A family piece that imports itself is a cycle; `shared/x` is no family.
    assert!(matches!(
        compose(&dir, &dir.join("fam/shared/q.wgsl")),
        Err(ComposeError::Cycle { .. })
    ));
    std::fs::write(dir.join("bad.wgsl"), "#import shared/g\n").unwrap();
    assert!(matches!(
        compose(&dir, &dir.join("bad.wgsl")),
        Err(ComposeError::BadDirective { .. })
    ));
}

#[test]
fn import_cycles_unknown_pieces_and_bad_directives_are_errors() {
    let dir = scratch(
        "errors",
        &[
            ("cycle.wgsl", "#import a\n"),
            ("shared/a.wgsl", "#import b\n"),
            ("shared/b.wgsl", "\n#import a\n"),
            ("unknown.wgsl", "const X: u32 = 1u;\n#import nowhere\n"),
            ("bad.wgsl", "#import A-B\n"),
        ],
    );
    match compose(&dir, &dir.join("cycle.wgsl")) {
        Err(ComposeError::Cycle { chain, at }) => {
            assert_eq!(chain, ["a", "b", "a"]);
            assert_eq!((at.file, at.line), (dir.join("shared/b.wgsl"), 2));
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    // A piece composed on its own is part of its own chain.
    assert!(matches!(
        compose(&dir, &dir.join("shared/a.wgsl")),
        Err(ComposeError::Cycle { .. })
    ));
    match compose(&dir, &dir.join("unknown.wgsl")) {
        Err(e @ ComposeError::Read { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("nowhere.wgsl") && text.contains("unknown.wgsl:2"),
                "{text}"
            );
        }
        other => panic!("expected a read error, got {other:?}"),
    }
    assert!(matches!(
        compose(&dir, &dir.join("bad.wgsl")),
        Err(ComposeError::BadDirective { .. })
    ));
}

#[test]
fn a_naga_error_names_the_original_file_and_line() {
    let dir = scratch(
        "naga",
        &[
            (
                "k.wgsl",
                "#import good\n#import broken\nconst K: u32 = 2u;\n",
            ),
            ("shared/good.wgsl", "const G: u32 = 1u;\n"),
            ("shared/broken.wgsl", "// fine\n\nconst X: u32 = 1.5;\n"),
        ],
    );
    let c = compose(&dir, &dir.join("k.wgsl")).unwrap();
    let e = reflect::validate("k.wgsl", &c).unwrap_err();
    let expected = format!("{}:3:", dir.join("shared/broken.wgsl").display());
    assert!(e.contains(&expected), "{e}");
}

/// The tile core's stages (`gemm_a`, `gemm_b`) take 8448 bytes at GEMM_DEPTH 8 and 16 896 at
/// 16; `GemmConfig::fits` (src/kernels/primitives/gemm.rs) admits a depth where they and 256
/// bytes more fit the device. Every kernel on the core keeps within those 256 beside them.
#[test]
fn tile_core_kernels_keep_little_workgroup_memory_beside_the_stages() {
    let mut on_the_core = 0;
    for path in kernels() {
        let (_, module, info) = validated(&path);
        for (i, ep) in module.entry_points.iter().enumerate() {
            let uses = info.get_entry_point(i);
            let (mut stages, mut beside) = (0, 0);
            for (h, var) in module.global_variables.iter() {
                if var.space != naga::AddressSpace::WorkGroup || uses[h].is_empty() {
                    continue;
                }
                match var.name.as_deref() {
                    Some("gemm_a" | "gemm_b") => stages += 1,
                    _ => beside += module.types[var.ty].inner.size(module.to_ctx()),
                }
            }
            if stages > 0 {
                on_the_core += 1;
                assert_eq!(stages, 2, "{} {}", path.display(), ep.name);
                assert!(
                    beside <= 256,
                    "{} {}: {beside} bytes of workgroup memory beside the stages",
                    path.display(),
                    ep.name
                );
            }
        }
    }
    // assign_tiled, pairwise_distances, gram_tiled, affine_matmul, the RBF product, the
    // silhouette's sums, mahalanobis_full, weighted_scatter_tiled at least.
    assert!(on_the_core >= 8, "{on_the_core}");
}
