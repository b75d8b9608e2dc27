//! `info`, and the promises about stderr on a machine with no display: nothing on success,
//! errors in the program's own prefixed form.

use crate::common::{blobs_npy, command, json_line, ok, s, stderr, PREFIX};

#[test]
fn info_human_and_json() {
    let text = ok(&crate::common::cli(&["info"]));
    for word in ["adapter:", "backend:", "device type:", "driver:", "limits:"] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }

    let info = json_line(&crate::common::cli(&["info", "--json"]));
    for key in [
        "name",
        "backend",
        "device_type",
        "driver",
        "max_storage_buffer_binding_size",
        "max_buffer_size",
    ] {
        assert!(info.get(key).is_some(), "{key} missing from {info}");
    }
    assert!(!info["name"].as_str().unwrap().is_empty());
    assert!(info["max_storage_buffer_binding_size"].as_u64().unwrap() > 0);
}

#[test]
fn info_ceilings_adds_the_measured_peaks() {
    let text = ok(&crate::common::cli(&["info", "--ceilings"]));
    for word in ["ceilings", "GFLOP/s", "GB/s"] {
        assert!(text.contains(word), "{word:?} missing from {text}");
    }
    let plain = json_line(&crate::common::cli(&["info", "--json"]));
    assert!(
        plain.get("peak_gflops").is_none(),
        "measured without --ceilings"
    );

    let info = json_line(&crate::common::cli(&["info", "--ceilings", "--json"]));
    assert!(!info["name"].as_str().unwrap().is_empty());
    for key in ["peak_gflops", "peak_gbps"] {
        let v = info[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing from {info}"));
        assert!(v.is_finite() && v > 0.0, "{key} = {v}");
    }
}

/// Variables a display session sets, and those that configure Mesa's device-selection layer:
/// removed to run the program as on a plain server, whatever the test machine has.
const SESSION_VARIABLES: [&str; 8] = [
    "XDG_RUNTIME_DIR",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DISPLAY",
    "NODEVICE_SELECT",
    "MESA_VK_DEVICE_SELECT",
    "MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE",
    "DRI_PRIME",
];

#[test]
fn without_a_display_a_success_prints_nothing_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let x = blobs_npy(dir.path(), "x.npy", 50, 2, 2, 40);
    let labels = dir.path().join("labels.npy");
    for args in [
        vec!["info"],
        vec![
            "kmeans",
            "--input",
            s(&x),
            "--k",
            "2",
            "--output",
            s(&labels),
        ],
    ] {
        let mut headless = command(&args);
        for name in SESSION_VARIABLES {
            headless.env_remove(name);
        }
        let out = headless.output().unwrap();
        // `ok` asserts exit 0 and an empty stderr: no loader or driver line either.
        ok(&out);
    }
}

#[test]
fn usage_errors_carry_the_program_prefix_and_help_goes_to_stdout() {
    let out = crate::common::cli(&["kmeans", "--k"]);
    let err = crate::common::usage_fails(&out);
    assert!(err.lines().count() > 1, "usage lines expected: {err:?}");
    assert!(err.starts_with(PREFIX), "{err:?}");

    for args in [["--help"], ["--version"]] {
        let text = ok(&crate::common::cli(&args));
        assert!(text.contains("wgpu-unsupervised"), "{text}");
    }
    // No subcommand: clap's help on stderr, exit 2.
    let out = crate::common::cli(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Usage"), "{}", stderr(&out));
}
