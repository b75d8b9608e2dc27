//! Every WGSL file parses, validates and compiles to SPIR-V for each entry point, with naga
//! alone (no GPU). Also checks the layout rule: each `shaders/NAME.wgsl` has its host wrapper
//! `src/kernels/NAME.rs`.

use std::path::{Path, PathBuf};

fn shader_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("shaders/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the kernel families, found {files:?}"
    );
    files
}

fn validate(path: &Path) -> (naga::Module, naga::valid::ModuleInfo) {
    let source = std::fs::read_to_string(path).unwrap();
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&source)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&source)));
    (module, info)
}

#[test]
fn every_shader_validates_and_compiles_per_entry_point() {
    for path in shader_files() {
        let (module, info) = validate(&path);
        assert!(
            !module.entry_points.is_empty(),
            "{} has no entry point",
            path.display()
        );
        for ep in &module.entry_points {
            // Resolve the overrides as a pipeline would (defaults and a non-default size).
            for wg in [None, Some(256.0)] {
                let mut constants = naga::back::PipelineConstants::default();
                if let Some(wg) = wg {
                    constants.insert("WG_SIZE".to_string(), wg);
                }
                let (resolved, resolved_info) = naga::back::pipeline_constants::process_overrides(
                    &module,
                    &info,
                    Some((naga::ShaderStage::Compute, &ep.name)),
                    &constants,
                )
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), ep.name));
                let options = naga::back::spv::Options::default();
                let pipeline = naga::back::spv::PipelineOptions {
                    shader_stage: naga::ShaderStage::Compute,
                    entry_point: ep.name.clone(),
                };
                let words = naga::back::spv::write_vec(
                    &resolved,
                    &resolved_info,
                    &options,
                    Some(&pipeline),
                )
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), ep.name));
                assert!(words.len() > 10);
            }
        }
    }
}

#[test]
fn every_shader_has_a_same_named_host_wrapper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in shader_files() {
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let wrapper = root.join("src/kernels").join(format!("{stem}.rs"));
        assert!(
            wrapper.exists(),
            "{} has no wrapper {}",
            path.display(),
            wrapper.display()
        );
        let text = std::fs::read_to_string(&wrapper).unwrap();
        assert!(
            text.contains(&format!("{stem}.wgsl")),
            "{} does not name its shader",
            wrapper.display()
        );
    }
}

#[test]
fn workgroup_size_is_an_override_in_every_shader() {
    for path in shader_files() {
        let (module, _) = validate(&path);
        assert!(
            module
                .overrides
                .iter()
                .any(|(_, o)| o.name.as_deref() == Some("WG_SIZE")),
            "{} must take WG_SIZE as an override constant",
            path.display()
        );
    }
}
