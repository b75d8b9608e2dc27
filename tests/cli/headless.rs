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

/// Set in the environment of the child that [`an_embedding_program_opens_the_gpu_quietly`]
/// starts.
const CHILD: &str = "WGPU_UNSUPERVISED_HEADLESS_CHILD";

#[test]
fn an_embedding_program_opens_the_gpu_quietly() {
    // This test binary, run again as a program that embeds the library: it makes the
    // library's call first, then opens the GPU, in a shell with no display session.
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe);
    child
        .args([
            "--exact",
            "headless::embedded_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, "1");
    for name in SESSION_VARIABLES {
        child.env_remove(name);
    }
    let out = child.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("1 passed"), "the child ran: {stdout}");
    assert!(stdout.contains("adapter opened: "), "{stdout}");
    assert!(
        !stderr.contains("XDG_RUNTIME_DIR") && !stderr.contains("error"),
        "stderr of the embedding program: {stderr:?}"
    );
}

/// The embedding program of [`an_embedding_program_opens_the_gpu_quietly`]; ignored unless
/// started by it (it must be the process's first and only test).
#[test]
#[ignore = "started by an_embedding_program_opens_the_gpu_quietly in a child process"]
fn embedded_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "run by an_embedding_program_opens_the_gpu_quietly only"
    );
    let set = wgpu_unsupervised::headless::avoid_window_system_probe();
    // With no display session and no layer setting, the probe could only fail: turned off.
    assert_eq!(
        set,
        cfg!(all(
            unix,
            not(target_os = "macos"),
            not(target_os = "android")
        )),
        "NODEVICE_SELECT={:?}",
        std::env::var_os("NODEVICE_SELECT")
    );
    let gpu = crate::common::gpu();
    println!("adapter opened: {}", gpu.info());
}
