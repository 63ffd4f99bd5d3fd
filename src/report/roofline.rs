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
    /// Bytes a read-only run moves: the source once, and one word per invocation.
    pub read_bytes: u64,
    /// Best read-only bandwidth (each invocation sums its vec4s of the source), GB/s: the
    /// ceiling of a kernel that streams its input and writes little.
    pub read_gbps: f64,
    /// Median read-only bandwidth, GB/s.
    pub read_gbps_median: f64,
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
    let read = measure_read(gpu, &src, reps)?;
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
        read_bytes: read.bytes,
        read_gbps: read.bytes as f64 / read.times[0] / 1e9,
        read_gbps_median: read.bytes as f64 / read.times[read.times.len() / 2] / 1e9,
        dispatch_us: per[per.len() / 2] * 1e6,
        timing: times[0].source().into(),
    })
}

/// A read-only run's bytes and its times (seconds, fastest first).
struct ReadTimes {
    bytes: u64,
    times: Vec<f64>,
}

/// vec4s each invocation of the read probe sums at least: its one store is then at most
/// 1/64 of the bytes it reads.
const READ_PER_INVOCATION: usize = 16;

/// Times `runtime/read` over `src` (filled with 1, 2, 3, 4), then checks every invocation's
/// sum (10 per vec4 it read: exact in f32), so the figure is of a run that read it all.
fn measure_read(gpu: &Gpu, src: &GpuBuffer<[f32; 4]>, reps: usize) -> Result<ReadTimes> {
    let n4 = src.len();
    let wg = 256u32;
    let groups = (n4.div_ceil(wg as usize * READ_PER_INVOCATION) as u32)
        .clamp(1, gpu.caps.max_workgroups_per_dimension);
    let threads = (groups * wg) as usize;
    let sums = GpuBuffer::<f32>::zeroed(gpu, "roofline.read.sums", threads)?;
    let kernel = gpu.kernel(&KernelSpec {
        name: "runtime/read",
        defines: vec![],
        constants: vec![("WG", wg as f64)],
        bindings: &[Binding::Uniform, Binding::Read, Binding::ReadWrite],
    })?;
    let params = gpu.uniform(
        "roofline.read.params",
        &CopyParams {
            n4: n4 as u32,
            stride: threads as u32,
        },
    );
    let bg = kernel.bind(gpu, &[&params, src.raw(), sums.raw()])?;
    sums.fill(gpu, f32::NAN)?;
    // Fastest first.
    let times = crate::gpu::timed_warm(gpu, reps, || {
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bg.clone(), [groups, 1, 1])?;
        batch.submit_timed()
    })?
    .iter()
    .map(|t| t.seconds)
    .collect();
    let got = sums.read(gpu)?;
    for (t, &s) in got.iter().enumerate() {
        let count = n4.saturating_sub(t).div_ceil(threads);
        if s != 10.0 * count as f32 {
            return Err(crate::Error::Gpu {
                kernel: "runtime/read".into(),
                message: format!(
                    "invocation {t} summed {s}, expected {} ({count} vec4s)",
                    10 * count
                ),
            });
        }
    }
    Ok(ReadTimes {
        bytes: n4 as u64 * 16 + threads as u64 * 4,
        times,
    })
}
