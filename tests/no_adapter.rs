//! With no matching adapter, `Gpu::new` explains how to get one. (Its own test binary: it
//! sets WGPU_ADAPTER_NAME for the whole process.)

use wgpu_unsupervised::{Error, Gpu};

#[test]
fn no_adapter_error_says_how_to_install_one() {
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe { std::env::set_var("WGPU_ADAPTER_NAME", "no such adapter 4f1c") };
    match Gpu::new() {
        Err(e @ Error::NoAdapter { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("mesa-vulkan-drivers"), "{msg}");
        }
        other => panic!("expected NoAdapter, got {other:?}"),
    }
}
