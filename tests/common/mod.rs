//! Shared helpers of the GPU tests: one device per test binary.

#![allow(dead_code)]

use std::sync::OnceLock;

use wgsparse::Gpu;

/// The test device (lavapipe on CI). Panics with the install hint when there is none.
pub fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| Gpu::new().unwrap_or_else(|e| panic!("{e}")))
}

/// The same adapter with no optional features: exercises every fallback path.
pub fn gpu_plain() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        Gpu::new_with(&wgsparse::gpu::GpuOptions {
            no_optional_features: true,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The same adapter with storage bindings capped at 8 KiB: small inputs then take the
/// paths that split data over several bindings.
pub fn gpu_small_bindings() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        Gpu::new_with(&wgsparse::gpu::GpuOptions {
            max_binding_bytes: Some(8 << 10),
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    })
}
