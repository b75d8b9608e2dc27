//! The rooms of the house, checked without a GPU (the layout in README.md, "Layout"):
//! - every algorithm folder (`kmeans/`, `gmm/`, `pca/`, `spectral/`) has the same rooms
//!   meaning the same thing, no import circle between its files, and its loop (`lloyd.rs`,
//!   `em.rs`, `power.rs`, `lobpcg.rs`) is a leaf that imports nothing else from its folder
//!   but the statistics it consumes, themselves a leaf;
//! - `gpu/`, the host layer, imports nothing above it (no kernel wrapper, no algorithm);
//! - `kernels/` reaches nothing above it either (no name of the crate root, no algorithm),
//!   and its files import each other without a circle;
//! - only `gpu/` and `kernels/` name wgpu: the algorithms hold typed device buffers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The text of `path` without comments (line comments; the code uses no block comments).
fn code_of(path: &Path) -> String {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first path segment of every path that follows `prefix` in `code` (e.g. `a` and `B`
/// for `use super::{a::x, B};` with prefix `super::`).
fn first_segments(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue; // the tail of another path, e.g. `foo_super::`
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(head(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            out.insert(head(&item));
        } else {
            out.insert(head(rest));
        }
    }
    out.remove("");
    out
}

/// The identifier a path starts with.
fn head(path: &str) -> String {
    path.trim().chars().take_while(|&c| is_ident(c)).collect()
}

/// A folder's modules and the names its face (`mod.rs`) re-exports, with their files.
struct Folder {
    modules: BTreeSet<String>,
    face: BTreeMap<String, String>,
}

fn folder(dir: &Path) -> Folder {
    let code = code_of(&dir.join("mod.rs"));
    let mut modules = BTreeSet::new();
    let mut face = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let words: Vec<&str> = stmt.split_whitespace().collect();
        if let Some(i) = words.iter().position(|&w| w == "mod") {
            if let Some(name) = words.get(i + 1) {
                modules.insert(name.to_string());
            }
        }
        if let Some(at) = stmt.find("use ") {
            let path = &stmt[at + 4..];
            let module = head(path);
            if let Some(names) = path.split_once("::").map(|(_, r)| r) {
                let names = names.trim().trim_start_matches('{').trim_end_matches('}');
                for name in names.split(',') {
                    let name = name.trim().rsplit("::").next().unwrap_or("").trim();
                    if !name.is_empty() {
                        face.insert(name.to_string(), module.clone());
                    }
                }
            }
        }
    }
    Folder { modules, face }
}

/// Which sibling files each file of `dir` imports (through `super::` paths and the face).
fn sibling_imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let f = folder(dir);
    let name = dir.file_name().unwrap().to_str().unwrap();
    let mut graph = BTreeMap::new();
    for module in &f.modules {
        let path = dir.join(format!("{module}.rs"));
        if !path.exists() {
            continue; // a sub-folder module
        }
        let code = code_of(&path);
        let mut segments = first_segments(&code, "super::");
        segments.extend(first_segments(&code, &format!("crate::{name}::")));
        let targets = segments
            .into_iter()
            .filter_map(|s| {
                if f.modules.contains(&s) {
                    Some(s)
                } else {
                    f.face.get(&s).cloned()
                }
            })
            .filter(|t| t != module)
            .collect();
        graph.insert(module.clone(), targets);
    }
    graph
}

/// A circle of `graph`, if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut c = path[i..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// (folder, its loop file, the shared rooms it has no use for) for every algorithm.
/// `spectral` has no mergeable statistics: its graph couples every row with every other.
const ALGORITHMS: [(&str, &str, &[&str]); 4] = [
    ("kmeans", "lloyd", &[]),
    ("gmm", "em", &[]),
    ("pca", "power", &[]),
    ("spectral", "lobpcg", &["stats"]),
];

/// The rooms every algorithm folder has, each meaning the same thing (module docs of each
/// `mod.rs`). `pca` has no seeding: its only random start is the power iteration's own.
const SHARED_ROOMS: [&str; 6] = ["params", "fit", "workspace", "model", "stats", "mod"];

#[test]
fn algorithm_folders_have_the_same_rooms_no_circles_and_a_leaf_loop() {
    for (name, loop_file, lacks) in ALGORITHMS {
        let dir = src().join(name);
        for room in SHARED_ROOMS.iter().filter(|r| !lacks.contains(r)) {
            assert!(
                dir.join(format!("{room}.rs")).exists(),
                "src/{name}/ has no {room}.rs"
            );
        }
        let graph = sibling_imports(&dir);
        assert!(
            graph.len() >= 5 && graph.values().any(|t| !t.is_empty()),
            "src/{name}/: the import scan saw nothing ({graph:?})"
        );
        if let Some(c) = circle(&graph) {
            panic!("src/{name}/ has an import circle: {}", c.join(" -> "));
        }
        // The loop may take the statistics it consumes (one shape from the kernels to the
        // update), when those import nothing from the folder themselves.
        let from_loop = &graph[loop_file];
        assert!(
            from_loop.iter().all(|t| t == "stats")
                && (!from_loop.contains("stats") || graph["stats"].is_empty()),
            "src/{name}/{loop_file}.rs (the loop) imports {from_loop:?} from its folder, or the \
             statistics it takes are no leaf"
        );
        // The loop is used: some sibling imports it (the scan is not blind).
        assert!(
            graph.values().any(|t| t.contains(loop_file)),
            "nothing in src/{name}/ imports {loop_file}.rs"
        );
    }
}

#[test]
fn the_import_scan_sees_grouped_and_face_imports() {
    let code = "use super::lloyd::{fit, Run};\nuse super::{KMeans, stats::X};\nlet y = super::seeding::f();";
    let seen = first_segments(code, "super::");
    let want: BTreeSet<String> = ["lloyd", "KMeans", "stats", "seeding"]
        .map(String::from)
        .into();
    assert_eq!(seen, want);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(circle(&g).is_some());
    g.insert("b".to_string(), BTreeSet::new());
    assert!(circle(&g).is_none());
}

/// What the host layer may import from the crate: the layers below it.
const BELOW_GPU: [&str; 4] = ["gpu", "error", "data", "source"];

#[test]
fn the_host_layer_imports_nothing_above_it() {
    let dir = src().join("gpu");
    let mut offenders = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let code = code_of(&path);
        for module in first_segments(&code, "crate::") {
            seen += 1;
            if !BELOW_GPU.contains(&module.as_str()) {
                offenders.push(format!("{} imports crate::{module}", path.display()));
            }
        }
        if code.contains("super::super") {
            offenders.push(format!("{} climbs out with super::super", path.display()));
        }
    }
    assert!(seen > 5, "the scan of src/gpu/ saw only {seen} crate paths");
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn only_the_host_layer_and_the_kernel_wrappers_name_wgpu() {
    let mut offenders = Vec::new();
    for dir in ["kmeans", "gmm", "pca", "spectral", "metrics"] {
        for entry in std::fs::read_dir(src().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") && code_of(&path).contains("wgpu::") {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these hold raw wgpu types; use gpu::device_buffer::DeviceBuffer and GpuMatrix:\n{}",
        offenders.join("\n")
    );
    // The check can fail: the kernel wrappers do name wgpu.
    assert!(code_of(&src().join("kernels/products/covariance.rs")).contains("wgpu::"));
}

/// Every `.rs` file under `dir`, recursively, as (path relative to `src/kernels` without
/// `.rs`, e.g. `assign/mod`, and the file).
fn kernel_files(dir: &Path, into: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            kernel_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src().join("kernels")).unwrap();
            let name = rel.with_extension("").to_str().unwrap().replace('\\', "/");
            into.push((name, path));
        }
    }
}

/// What a kernel file may import from the crate: the host layer, the layers below it, and
/// the kernels.
const BELOW_KERNELS: [&str; 4] = ["gpu", "error", "data", "kernels"];

#[test]
fn kernels_reach_nothing_above_them_and_import_each_other_without_a_circle() {
    let mut files = Vec::new();
    kernel_files(&src().join("kernels"), &mut files);
    assert!(files.len() > 30, "{files:?}");
    let known: BTreeSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    // The file a path names: `a/b` (a file), or `a/mod` (a folder's face).
    let resolve = |path: &[String]| -> Option<String> {
        for len in (1..=path.len()).rev() {
            let stem = path[..len].join("/");
            if known.contains(stem.as_str()) {
                return Some(stem);
            }
            let face = format!("{stem}/mod");
            if known.contains(face.as_str()) {
                return Some(face);
            }
        }
        None
    };
    let mut offenders = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, path) in &files {
        // An inline test module's `super::` is the file itself: the file's own code is what
        // imports.
        let whole = code_of(path);
        let code = whole
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for module in first_segments(&whole, "crate::") {
            if !BELOW_KERNELS.contains(&module.as_str()) {
                offenders.push(format!("src/kernels/{name}.rs names crate::{module}"));
            }
        }
        // The module a file is (`assign` for `assign/mod`, `assign/tiled` for itself), and
        // its parent, which `super::` names.
        let parts: Vec<String> = name.split('/').map(String::from).collect();
        let own: Vec<String> = match parts.last().map(String::as_str) {
            Some("mod") => parts[..parts.len() - 1].to_vec(),
            _ => parts.clone(),
        };
        let here: Vec<String> = own[..own.len().saturating_sub(1)].to_vec();
        let mut targets = BTreeSet::new();
        // A face's own children, named by relative paths (`tiled::record_tiled`).
        if name.ends_with("mod") {
            for stmt in code.split(';') {
                let words: Vec<&str> = stmt.split_whitespace().collect();
                if let Some(i) = words.iter().position(|&w| w == "mod") {
                    let Some(child) = words.get(i + 1) else {
                        continue;
                    };
                    let used = code
                        .match_indices(&format!("{child}::"))
                        .any(|(at, _)| !code[..at].ends_with(|c: char| is_ident(c) || c == ':'));
                    if used {
                        let mut path = own.clone();
                        path.push(child.to_string());
                        targets.extend(resolve(&path));
                    }
                }
            }
        }
        for (at, _) in code.match_indices("crate::kernels::") {
            let rest = &code[at + "crate::kernels::".len()..];
            let path: Vec<String> = rest
                .split("::")
                .map(head)
                .take_while(|s| !s.is_empty())
                .collect();
            targets.extend(resolve(&path));
        }
        for segment in first_segments(code, "super::") {
            let mut path = here.clone();
            path.push(segment);
            targets.extend(resolve(&path));
        }
        targets.remove(name);
        graph.insert(name.clone(), targets);
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
    assert!(
        graph["assign/mod"].contains("assign/tiled")
            && graph["assign/tiled"].contains("assign/args"),
        "the scan saw nothing: {:?}",
        graph["assign/mod"]
    );
    if let Some(c) = circle(&graph) {
        panic!("src/kernels/ has an import circle: {}", c.join(" -> "));
    }
}
