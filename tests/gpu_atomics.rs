//! The shared WGSL library's f32 adds on a real adapter: into storage (native or by
//! compare-exchange) and into workgroup memory (native through the SPIR-V rewrite, or by
//! compare-exchange), and the refusal of native workgroup adds on a device without them.

mod common;

use wgsparse::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use wgsparse::Gpu;

fn run_atomic(gpu: &Gpu, native: bool, native_wg: bool) {
    let (wg, bins, groups) = (64u32, 5u32, 16u32);
    let n = (wg * groups) as usize;
    let x = common::random_values(n, 11);
    let mut defines = vec![];
    if native {
        defines.push("F32_ATOMIC");
    }
    if native_wg {
        defines.push("WG_F32_NATIVE");
    }
    let kernel = gpu
        .kernel(&KernelSpec {
            name: "selftest/atomic",
            defines,
            constants: vec![("WG", wg as f64), ("BINS", bins as f64)],
            bindings: &[Binding::Read, Binding::ReadWrite],
        })
        .unwrap();
    let xb = GpuBuffer::upload(gpu, "x", &x).unwrap();
    let acc = GpuBuffer::<f32>::zeroed(gpu, "accum", 2 * bins as usize).unwrap();
    let mut batch = Batch::new(gpu);
    let bg = kernel.bind(gpu, &[xb.raw(), acc.raw()]).unwrap();
    batch.dispatch(&kernel, bg, [groups, 1, 1]).unwrap();
    batch.submit().unwrap();
    let got = acc.read(gpu).unwrap();
    for b in 0..bins as usize {
        let want: f64 = x
            .iter()
            .skip(b)
            .step_by(bins as usize)
            .map(|&v| v as f64)
            .sum();
        let mag: f64 = x
            .iter()
            .skip(b)
            .step_by(bins as usize)
            .map(|&v| v.abs() as f64)
            .sum();
        for half in 0..2 {
            let g = got[half * bins as usize + b] as f64;
            assert!(
                (g - want).abs() <= n as f64 * f32::EPSILON as f64 * mag,
                "native {native}, workgroup {native_wg}: bin {b} half {half}: {g} vs {want}"
            );
        }
    }
}

#[test]
fn f32_atomics_native_and_cas() {
    let gpu = common::gpu();
    run_atomic(gpu, false, false);
    if gpu.caps.f32_atomics {
        run_atomic(gpu, true, false);
    }
    if gpu.caps.wg_f32_atomics {
        run_atomic(gpu, false, true);
        run_atomic(gpu, true, true);
    }
}

/// Lavapipe and NVIDIA's Vulkan drivers both have `shaderSharedFloat32AtomicAdd`, so the
/// native workgroup path above is not skipped where the suite runs (CI's lavapipe, the
/// NVIDIA machine).
#[test]
fn workgroup_f32_adds_are_native_on_the_suites_devices() {
    let gpu = common::gpu();
    let name = gpu.caps.adapter_name.to_lowercase();
    let known = name.contains("llvmpipe") || name.contains("nvidia");
    if gpu.caps.backend == "Vulkan"
        && known
        && std::env::var("WGSPARSE_WG_F32_ATOMICS").as_deref() != Ok("0")
    {
        assert!(
            gpu.caps.wg_f32_atomics,
            "{} opened without workgroup f32 adds",
            gpu.caps.adapter_name
        );
    }
}

#[test]
fn a_native_workgroup_kernel_is_refused_on_a_device_without_the_feature() {
    let gpu = common::gpu_plain();
    let err = gpu
        .kernel(&KernelSpec {
            name: "selftest/atomic",
            defines: vec!["WG_F32_NATIVE"],
            constants: vec![("WG", 64.0), ("BINS", 5.0)],
            bindings: &[Binding::Read, Binding::ReadWrite],
        })
        .err()
        .expect("refused");
    assert!(err.to_string().contains("workgroup memory"), "{err}");
}

#[test]
fn the_fallback_device_adds_by_compare_exchange() {
    let gpu = common::gpu_plain();
    assert!(!gpu.caps.f32_atomics && !gpu.caps.wg_f32_atomics);
    run_atomic(gpu, false, false);
}
