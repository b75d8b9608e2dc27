//! Quiet start-up on machines without a display (servers, containers, CI runners): the
//! program calls the library's [`wgpu_unsupervised::headless::avoid_window_system_probe`]
//! first thing, which turns off Mesa's device-selection layer for this process with
//! `NODEVICE_SELECT=1` when its Wayland probe could only fail, loudly (`error:
//! XDG_RUNTIME_DIR is invalid or not set in the environment.` on every run). The library's
//! module docs tell where that line comes from and exactly what the call changes. A user who
//! configured the layer (`MESA_VK_DEVICE_SELECT`, `MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE`,
//! `DRI_PRIME` or `NODEVICE_SELECT` itself) keeps it as configured.

/// Turns off Mesa's device-selection layer for this process when its Wayland probe could only
/// fail (see the module docs).
///
/// Must run before any other thread exists: it may set an environment variable, which races
/// with `getenv` calls on other threads (the Vulkan loader reads the variable when the first
/// GPU instance is created, later on the main thread).
pub fn avoid_window_system_probe() {
    wgpu_unsupervised::headless::avoid_window_system_probe();
}
