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
