//! The denominator of every report: achieved copy bandwidth and per-dispatch overhead.

use bytemuck::{Pod, Zeroable};
use serde::Serialize;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::Result;

/// What `wgsparse roofline` measures.
#[derive(Clone, Debug, Serialize)]
pub struct Roofline {
    /// Adapter name.
    pub adapter: String,
    /// Bytes copied per run (read + write counted).
    pub bytes_moved: u64,
    /// Best copy bandwidth over the repetitions, in GB/s (10⁹ bytes per second).
    pub copy_gbps: f64,
    /// Median copy bandwidth, GB/s.
    pub copy_gbps_median: f64,
    /// Cost of one dispatch inside a compute pass, microseconds.
    pub dispatch_us: f64,
    /// Timing source ("timestamps" or "wall clock").
    pub timing: String,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CopyParams {
    n4: u32,
    stride: u32,
}

/// Measures vec4 copy bandwidth over `bytes` bytes (each way) and the per-dispatch cost of
/// `dispatches` one-workgroup dispatches in one pass; `reps` repetitions each.
pub fn measure(gpu: &Gpu, bytes: u64, reps: usize, dispatches: u32) -> Result<Roofline> {
    // The medians below need at least one timed repetition.
    if reps == 0 {
        return Err(crate::Error::Option(
            "roofline: at least one timed repetition".into(),
        ));
    }
    let limit = gpu
        .caps
        .max_storage_binding_bytes
        .min(gpu.caps.max_buffer_bytes);
    let bytes = bytes.min(limit / 16 * 16).max(1 << 16);
    let n4 = (bytes / 16) as usize;
    let src = GpuBuffer::<[f32; 4]>::filled(gpu, "roofline.src", n4, [1.0, 2.0, 3.0, 4.0])?;
    let dst = GpuBuffer::<[f32; 4]>::zeroed(gpu, "roofline.dst", n4)?;
    let wg = 256u32;
    let groups = (n4 as u32)
        .div_ceil(wg)
        .min(gpu.caps.max_workgroups_per_dimension);
    let kernel = gpu.kernel(&KernelSpec {
        name: "runtime/copy",
        defines: vec![],
        constants: vec![("WG", wg as f64)],
        bindings: &[Binding::Uniform, Binding::Read, Binding::ReadWrite],
    })?;
    let params = gpu.uniform(
        "roofline.params",
        &CopyParams {
            n4: n4 as u32,
            stride: groups * wg,
        },
    );
    let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()])?;
    let times = crate::gpu::timed_warm(gpu, reps, || {
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bg.clone(), [groups, 1, 1])?;
        batch.submit_timed()
    })?;
    let moved = 2 * (n4 as u64) * 16;
    let empty = gpu.kernel(&KernelSpec {
        name: "runtime/empty",
        defines: vec![],
        constants: vec![],
        bindings: &[Binding::ReadWrite],
    })?;
    let sink = GpuBuffer::<u32>::zeroed(gpu, "roofline.sink", 4)?;
    let ebg = empty.bind(gpu, &[sink.raw()])?;
    let mut per = Vec::new();
    for rep in 0..reps.min(5) + 1 {
        let mut batch = Batch::new(gpu);
        for _ in 0..dispatches {
            batch.dispatch(&empty, ebg.clone(), [1, 1, 1])?;
        }
        let t = batch.submit_timed()?;
        if rep > 0 {
            per.push(t.seconds / dispatches.max(1) as f64);
        }
    }
    per.sort_by(f64::total_cmp);
    Ok(Roofline {
        adapter: gpu.caps.adapter_name.clone(),
        bytes_moved: moved,
        copy_gbps: moved as f64 / times[0].seconds / 1e9,
        copy_gbps_median: moved as f64 / times[times.len() / 2].seconds / 1e9,
        dispatch_us: per[per.len() / 2] * 1e6,
        timing: times[0].source().into(),
    })
}
