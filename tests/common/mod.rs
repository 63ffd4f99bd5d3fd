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

/// Runs the `wgsparse` binary with `args` (a private autotune cache): (success, stdout, stderr).
pub fn wgsparse(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgsparse"))
        .args(args)
        .env(
            "WGSPARSE_CACHE_DIR",
            std::env::temp_dir().join("wgsparse-cli-test"),
        )
        .output()
        .expect("the binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary, asserts it succeeded and parses its stdout as one JSON object.
pub fn wgsparse_json(args: &[&str]) -> serde_json::Value {
    let (ok, stdout, stderr) = wgsparse(args);
    assert!(ok, "wgsparse {args:?} failed: {stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{args:?}: {e}\n{stdout}"))
}
