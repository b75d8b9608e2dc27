//! The shape of the code, checked without a GPU: the CPU oracle stays a leaf (nothing in
//! the library or the program names it, so a bug in shared code cannot hide in a comparison
//! with it), and no source file grows past 600 lines.

use std::path::{Path, PathBuf};

/// The most lines a `.rs` file may have (the developers' guide).
const MAX_LINES: usize = 600;

/// Every `.rs` file under `dir` (recursively), or none when `dir` does not exist.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn nothing_outside_the_reference_names_it() {
    let src = root().join("src");
    let oracle = src.join("reference");
    let files = rust_files(&src);
    assert!(
        files.len() > 20,
        "found only {} files under src/",
        files.len()
    );
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&oracle)) {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            // A path into the oracle, or an import of it (a doc link to the module is fine).
            if names_the_oracle(line) || line.contains("use crate::reference") {
                offenders.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "only src/reference/ and the tests may use the CPU oracle:\n{}",
        offenders.join("\n")
    );
}

/// Whether `line` has a path segment `reference::` (not the tail of another name, such as
/// wgpu's `PowerPreference::`).
fn names_the_oracle(line: &str) -> bool {
    line.match_indices("reference::").any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn the_oracle_check_sees_a_use() {
    assert!(names_the_oracle(
        "use wgpu_unsupervised::reference::kmeans;"
    ));
    assert!(names_the_oracle("let r = reference::gmm::fit(x);"));
    assert!(!names_the_oracle("wgpu::PowerPreference::LowPower"));
    // The scan above must not pass for want of looking: the oracle's own files name it.
    let oracle = root().join("src/reference");
    let named = rust_files(&oracle).iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap()
            .contains("crate::reference::")
    });
    assert!(
        named,
        "src/reference/ no longer names itself; is the scan still meaningful?"
    );
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut too_long = Vec::new();
    let mut seen = 0;
    for dir in ["src", "tests", "benches", "examples", "build"] {
        for file in rust_files(&root().join(dir)) {
            seen += 1;
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > MAX_LINES {
                too_long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(seen > 40, "found only {seen} source files");
    assert!(
        too_long.is_empty(),
        "files over {MAX_LINES} lines (split them by topic):\n{}",
        too_long.join("\n")
    );
}
