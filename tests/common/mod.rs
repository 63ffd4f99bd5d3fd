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

/// The runtime's `runtime/copy` kernel at 64 invocations (uniform params, read, read-write):
/// the small dispatch the runtime tests record, gate, time and replay.
pub fn copy_kernel(gpu: &Gpu) -> std::sync::Arc<wgsparse::gpu::Kernel> {
    gpu.kernel(&wgsparse::gpu::KernelSpec {
        name: "runtime/copy",
        defines: vec![],
        constants: vec![("WG", 64.0)],
        bindings: &[
            wgsparse::gpu::Binding::Uniform,
            wgsparse::gpu::Binding::Read,
            wgsparse::gpu::Binding::ReadWrite,
        ],
    })
    .unwrap()
}

/// The `wgsparse` binary: `$WGSPARSE_BIN` when set, else the one cargo built for this test,
/// else one beside the test executable or up to two folders above it (a test binary copied
/// with the binary to another machine, e.g. into `.gpu/`).
pub fn binary() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("WGSPARSE_BIN") {
        return p.into();
    }
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_wgsparse"));
    if built.is_file() {
        return built;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join(built.file_name().expect("a file name")))
        .find(|c| c.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no wgsparse binary at {} nor beside {}: set WGSPARSE_BIN",
                built.display(),
                exe.display()
            )
        })
}

/// Runs the `wgsparse` binary with `args` (a private autotune cache): (exit code, −1 when
/// a signal ended it; stdout; stderr).
pub fn wgsparse_exit(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(binary())
        .args(args)
        .env(
            "WGSPARSE_CACHE_DIR",
            std::env::temp_dir().join("wgsparse-cli-test"),
        )
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`wgsparse_exit`] with the exit code as success: (success, stdout, stderr).
pub fn wgsparse(args: &[&str]) -> (bool, String, String) {
    let (code, stdout, stderr) = wgsparse_exit(args);
    (code == 0, stdout, stderr)
}

/// Runs the binary, asserts it succeeded and parses its stdout as one JSON object.
pub fn wgsparse_json(args: &[&str]) -> serde_json::Value {
    let (ok, stdout, stderr) = wgsparse(args);
    assert!(ok, "wgsparse {args:?} failed: {stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{args:?}: {e}\n{stdout}"))
}

/// [`wgsparse_json`] with its own cache folder (the tuning cache and the stored residency
/// calibration) and no residency overrides from the environment.
pub fn wgsparse_json_in(cache: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(binary())
        .args(args)
        .env("WGSPARSE_CACHE_DIR", cache)
        .env_remove("WGSPARSE_COMPUTE_UNITS")
        .env_remove("WGSPARSE_UNIT_THREADS")
        .env_remove("WGSPARSE_UNIT_SHARED_BYTES")
        .env_remove("WGSPARSE_UNIT_GROUPS")
        .env_remove("WGSPARSE_UNIT_SHARED_RESERVED")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "wgsparse {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// n power-law values with random signs (never zero, widely spread), seeded.
pub fn random_values(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u: f32 = rng.random_range(0.05..1.0);
            let sign = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
            sign * u.powf(-1.5) / 10.0
        })
        .collect()
}

/// Helpers of the `wide` tests.
pub mod wide;

/// Helpers of the `fused` tests.
pub mod fused;

/// Helpers of the `mf` tests.
pub mod mf;

/// Helpers of the `spdnn` tests.
pub mod spdnn;
