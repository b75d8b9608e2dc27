//! Quiet GPU start-up on machines without a display (servers, containers, CI runners), for
//! programs that embed this library: one call, made by the program, never by the library on
//! its own.
//!
//! On such a machine a program that opens the GPU through Vulkan may print
//! `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` on stderr, once per
//! Vulkan instance, even when everything succeeds. Where it comes from (found with gdb, a
//! breakpoint on `wl_display_connect`):
//!
//! 1. wgpu-hal's Vulkan instance enables every window-system surface extension the loader
//!    offers, `VK_KHR_wayland_surface` among them (`desired_extensions` in
//!    `wgpu-hal/src/vulkan/instance.rs`; no instance setting turns that off, and
//!    `Instance::from_raw` requires those extensions too).
//! 2. Mesa's implicit layer `VK_LAYER_MESA_device_select` (installed with
//!    `mesa-vulkan-drivers`, so present wherever lavapipe is) sees that extension and, inside
//!    `vkEnumeratePhysicalDevices`, calls libwayland-client's `wl_display_connect` to find
//!    which GPU drives the Wayland compositor, so that it can list that GPU first.
//! 3. libwayland-client, with no `XDG_RUNTIME_DIR`, has no socket to connect to and prints
//!    that line before returning the failure the layer then ignores.
//!
//! Neither wgpu, the driver nor the adapter is at fault, and the probe cannot succeed: with
//! no runtime directory (and no `WAYLAND_SOCKET` or absolute `WAYLAND_DISPLAY`) there is no
//! compositor to find. [`avoid_window_system_probe`] turns the layer off in exactly that case,
//! for the calling process, with `NODEVICE_SELECT=1`, the switch the layer's manifest declares
//! for this (`disable_environment`). That removes the probe rather than hiding its output:
//! stderr is never captured, so a driver's message about a real failure still reaches the
//! user. Little is lost: the layer only reorders adapters (the one driving the display first,
//! and a machine without a compositor has none) or hides them on request, and
//! [`Gpu::new`](crate::Gpu::new) ranks the adapters itself (discrete before integrated before
//! software).
//!
//! What it changes, exactly: one environment variable of the calling process,
//! `NODEVICE_SELECT`, set to `1`, and only when (a) the platform is a Unix other than macOS,
//! iOS and Android, (b) none of the variables through which a user configures the layer is
//! set (`NODEVICE_SELECT`, `MESA_VK_DEVICE_SELECT`, `MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE`,
//! `DRI_PRIME`): a user who configured the layer keeps it as configured, and (c) no Wayland
//! compositor is reachable ([`window_system_probe_fails`]). Child processes inherit it. The
//! library never calls it by itself: setting a variable races with `getenv` on other threads,
//! so only the program, at the start of `main` before it starts any thread, can do it soundly.
//! The `wgpu-unsupervised` program and the crate's examples call it first thing:
//!
//! ```no_run
//! fn main() -> Result<(), wgpu_unsupervised::Error> {
//!     // First, while the process has one thread.
//!     wgpu_unsupervised::headless::avoid_window_system_probe();
//!     let gpu = wgpu_unsupervised::Gpu::new()?;
//!     println!("{}", gpu.info());
//!     Ok(())
//! }
//! ```
//!
//! A program that would rather set the variable itself (or in its service file) can ask
//! [`window_system_probe_fails`] whether it would help.

/// Variables through which a user talks to the device-selection layer; when any is set, the
/// layer is left exactly as the user configured it.
pub const LAYER_SETTINGS: [&str; 4] = [
    "NODEVICE_SELECT",
    "MESA_VK_DEVICE_SELECT",
    "MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE",
    "DRI_PRIME",
];

/// Whether Mesa's device-selection layer would probe for a Wayland compositor that cannot be
/// reached, and print the `XDG_RUNTIME_DIR` line (module docs): on a Unix other than macOS,
/// iOS and Android, with the layer not configured by the user and no compositor reachable.
/// Reads the environment; changes nothing.
pub fn window_system_probe_fails() -> bool {
    if !cfg!(all(
        unix,
        not(target_os = "macos"),
        not(target_os = "ios"),
        not(target_os = "android")
    )) {
        return false;
    }
    let set = |name: &str| std::env::var_os(name).is_some();
    if LAYER_SETTINGS.iter().any(|name| set(name)) {
        return false;
    }
    !wayland_reachable(
        std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        std::env::var_os("WAYLAND_DISPLAY").as_deref(),
        set("WAYLAND_SOCKET"),
    )
}

/// Sets `NODEVICE_SELECT=1` for this process when [`window_system_probe_fails`], so that
/// opening the GPU prints nothing on a machine without a display (module docs); returns
/// whether it set it.
///
/// Call it at the start of `main`, before any other thread exists: it may set an environment
/// variable, which races with `getenv` calls on other threads (the Vulkan loader reads the
/// variable when the first GPU instance is created).
pub fn avoid_window_system_probe() -> bool {
    if !window_system_probe_fails() {
        return false;
    }
    // Sound when called as documented: while the process has a single thread.
    std::env::set_var("NODEVICE_SELECT", "1");
    true
}

/// Whether libwayland-client could find a compositor socket with these variables, following
/// its rules: an inherited `WAYLAND_SOCKET`, an absolute `WAYLAND_DISPLAY` path, or a
/// display name inside an absolute `XDG_RUNTIME_DIR`. When this is false,
/// `wl_display_connect` fails and prints the `XDG_RUNTIME_DIR` line.
fn wayland_reachable(
    runtime_dir: Option<&std::ffi::OsStr>,
    display: Option<&std::ffi::OsStr>,
    socket: bool,
) -> bool {
    let absolute = |value: Option<&std::ffi::OsStr>| {
        value.is_some_and(|v| std::path::Path::new(v).is_absolute())
    };
    socket || absolute(display) || absolute(runtime_dir)
}

#[cfg(test)]
mod tests {
    use super::wayland_reachable;
    use std::ffi::OsStr;

    #[test]
    fn a_compositor_is_reachable_only_through_a_socket_or_an_absolute_path() {
        let run = Some(OsStr::new("/run/user/1000"));
        let name = Some(OsStr::new("wayland-0"));
        assert!(wayland_reachable(run, name, false));
        assert!(wayland_reachable(run, None, false));
        assert!(wayland_reachable(
            None,
            Some(OsStr::new("/tmp/wl.sock")),
            false
        ));
        assert!(wayland_reachable(None, None, true));
        // The headless cases: no runtime directory, or a relative one.
        assert!(!wayland_reachable(None, None, false));
        assert!(!wayland_reachable(None, name, false));
        assert!(!wayland_reachable(
            Some(OsStr::new("relative/dir")),
            name,
            false
        ));
        assert!(!wayland_reachable(Some(OsStr::new("")), None, false));
    }
}
