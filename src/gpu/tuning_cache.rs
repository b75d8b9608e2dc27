//! The autotuner's cache file (the format and its location; the rules are in the `tuning`
//! module docs). A line format by hand, because the default build has no JSON dependency:
//!
//! ```text
//! wgpu-unsupervised tuning cache 1
//! adapter<TAB><crate version, name, backend, driver, driver info, vendor and device ids>
//! <kernel><TAB><class a><TAB><class b><TAB><variant>
//! ...
//! ```
//!
//! Reading trusts nothing: any line that does not parse makes the whole file count as absent
//! (it is rewritten by the next choice), and so does an adapter line for another adapter.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::tuning::TuneKey;

/// The first line; a new format gets a new number, and old files are then ignored.
const MAGIC: &str = "wgpu-unsupervised tuning cache 2";

/// A file larger than this is not ours (a few hundred bytes per choice at most).
const MAX_BYTES: u64 = 1 << 20;

/// Stored choices: (family and candidates, shape class) to variant name.
pub(crate) type Stored = HashMap<(String, [u32; 2]), String>;

/// The key of `key` in [`Stored`].
pub(crate) fn entry_key(key: &TuneKey) -> (String, [u32; 2]) {
    (key.label(), key.class)
}

/// What a choice is valid for: this crate's version (the variants and their code) and the
/// adapter and driver that ran the trials. Tabs and line breaks become spaces, so it is one
/// field of one line.
pub(crate) fn identity(a: &wgpu::AdapterInfo) -> String {
    let text = format!(
        "wgpu-unsupervised {} | {} | {:?} | {} | {} | vendor {:#x} device {:#x}",
        env!("CARGO_PKG_VERSION"),
        a.name,
        a.backend,
        a.driver,
        a.driver_info,
        a.vendor,
        a.device
    );
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The file's name for `identity`: one file per adapter and driver, so machines with two
/// GPUs (or two drivers of one) keep both. FNV-1a, because std's hasher is not promised to
/// be stable across Rust releases.
pub(crate) fn file_name(identity: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in identity.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("tuning-{h:016x}.txt")
}

/// `$WGPU_UNSUPERVISED_TUNING_CACHE` (`None` for `off`), else the platform's cache directory
/// under `wgpu-unsupervised/` (`None` when the platform has none we can name).
pub(crate) fn default_dir() -> Option<PathBuf> {
    match std::env::var_os("WGPU_UNSUPERVISED_TUNING_CACHE") {
        Some(v) if v.eq_ignore_ascii_case("off") => return None,
        Some(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    platform_cache_dir().map(|d| d.join("wgpu-unsupervised"))
}

/// A non-empty absolute path from the variable `name`.
fn env_dir(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os(name)?);
    p.is_absolute().then_some(p)
}

#[cfg(windows)]
fn platform_cache_dir() -> Option<PathBuf> {
    env_dir("LOCALAPPDATA")
}

#[cfg(target_os = "macos")]
fn platform_cache_dir() -> Option<PathBuf> {
    env_dir("HOME").map(|h| h.join("Library").join("Caches"))
}

/// The XDG base directory rule: `$XDG_CACHE_HOME` when absolute, else `$HOME/.cache`.
#[cfg(all(unix, not(target_os = "macos")))]
fn platform_cache_dir() -> Option<PathBuf> {
    env_dir("XDG_CACHE_HOME").or_else(|| env_dir("HOME").map(|h| h.join(".cache")))
}

#[cfg(not(any(unix, windows)))]
fn platform_cache_dir() -> Option<PathBuf> {
    None
}

/// The choices in `path` if it is a well-formed cache for `identity`, else `None`.
pub(crate) fn read(path: &Path, identity: &str) -> Option<Stored> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    parse(&std::fs::read_to_string(path).ok()?, identity)
}

/// The choices in `text` (a file's content) for `identity`, or `None` for anything else.
pub(crate) fn parse(text: &str, identity: &str) -> Option<Stored> {
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    if lines.next()?.strip_prefix("adapter\t")? != identity {
        return None;
    }
    let mut stored = Stored::new();
    for line in lines {
        let mut fields = line.split('\t');
        let (Some(kernel), Some(a), Some(b), Some(variant), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return None;
        };
        if kernel.is_empty() || variant.is_empty() {
            return None;
        }
        let class = [a.parse().ok()?, b.parse().ok()?];
        stored.insert((kernel.to_string(), class), variant.to_string());
    }
    Some(stored)
}

/// The file's content for `stored`, sorted so that equal choices give equal files.
pub(crate) fn format(identity: &str, stored: &Stored) -> String {
    let mut entries: Vec<_> = stored.iter().collect();
    entries.sort();
    let mut text = format!("{MAGIC}\nadapter\t{identity}\n");
    for ((kernel, [a, b]), variant) in entries {
        text.push_str(&format!("{kernel}\t{a}\t{b}\t{variant}\n"));
    }
    text
}

/// Writes `stored` to `path` atomically: a temporary file in the same directory, renamed
/// over the old one (made with its directory if need be).
pub(crate) fn write(path: &Path, identity: &str, stored: &Stored) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Unique per process and call, so concurrent writers never share a temporary file.
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.{}-{serial}.tmp",
        path.file_name()
            .map_or("tuning".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(format(identity, stored).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_round_trips_and_refuses_anything_else() {
        let mut stored = Stored::new();
        stored.insert(("assign".into(), [64, 512]), "assign_rows".into());
        stored.insert(("test kernel".into(), [1, 2]), "fast".into());
        let text = format("gpu A", &stored);
        assert_eq!(parse(&text, "gpu A"), Some(stored.clone()));
        // Another adapter, driver or crate version: stale.
        assert_eq!(parse(&text, "gpu B"), None);
        // Corrupt in any line.
        for bad in [
            String::new(),
            text.replace(MAGIC, "wgpu-unsupervised tuning cache 0"),
            text.replace("\t512\t", "\tmany\t"),
            text.replace("\tfast", ""),
            text.replace("fast", "fast\textra"),
            text.clone() + "garbage\n",
        ] {
            assert_eq!(parse(&bad, "gpu A"), None, "{bad:?}");
        }
    }

    #[test]
    fn one_file_per_identity_and_no_control_characters_in_it() {
        let mut a = wgpu::AdapterInfo::new(wgpu::DeviceType::Cpu, wgpu::Backend::Vulkan);
        a.name = "llvmpipe\t(LLVM)\n".into();
        let id = identity(&a);
        assert!(!id.contains(['\t', '\n']) && id.contains(env!("CARGO_PKG_VERSION")));
        a.driver_info = "Mesa 25".into();
        assert_ne!(file_name(&id), file_name(&identity(&a)));
        assert_eq!(file_name(&id), file_name(&id));
    }
}
