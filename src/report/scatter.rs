//! The scatter probe: how many f32 atomic adds (or plain loads) at random words the device
//! serves per second, the denominator of the kernels whose cost is scattered adds (the wide
//! engine's Apply, the fused pattern's scatter into w) as copy bandwidth is of the streaming
//! ones.

use bytemuck::{Pod, Zeroable};
use serde::Serialize;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::{Error, Result};

/// One scatter measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ScatterRate {
    /// "add" (f32 atomic add, native or compare-exchange) or "load" (plain load).
    pub op: String,
    /// Whether the adds were native f32 atomics (false: the compare-exchange loop).
    pub native: bool,
    /// Bytes of the target array the words are drawn from.
    pub target_bytes: u64,
    /// Consecutive words per random run (1: every word random).
    pub run: u32,
    /// Operations per run of the kernel.
    pub count: u32,
    /// Best rate over the repetitions, 10⁹ operations per second.
    pub gops: f64,
    /// Median rate, 10⁹ operations per second.
    pub gops_median: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ScatterParams {
    count: u32,
    stride: u32,
    mask: u32,
    seed: u32,
}

/// What one scatter measurement does.
#[derive(Clone, Copy, Debug)]
pub struct ScatterSpec {
    /// Target bytes (rounded down to a power of two words, at least 1,024 words, within one
    /// storage binding).
    pub target_bytes: u64,
    /// Operations per run.
    pub count: u32,
    /// Consecutive words per random run (≥ 1).
    pub run: u32,
    /// Plain loads instead of atomic adds.
    pub gather: bool,
    /// Native f32 atomics when the adapter has them (else the compare-exchange loop).
    pub native_atomics: bool,
}

/// Words of the target: a power of two within the binding limit and `bytes`.
fn target_words(gpu: &Gpu, bytes: u64) -> u64 {
    let limit = gpu
        .caps
        .max_storage_binding_bytes
        .min(gpu.caps.max_buffer_bytes);
    let words = (bytes.min(limit) / 4).clamp(1024, 1 << 31);
    1 << (63 - words.leading_zeros())
}

/// Times `spec` `reps` times after the clocks have warmed; the adds' words are checked to
/// sum to the adds made (each add is 1.0 and every word stays an exact f32 integer).
pub fn measure_scatter(gpu: &Gpu, spec: ScatterSpec, reps: usize) -> Result<ScatterRate> {
    if reps == 0 || spec.count == 0 || spec.run == 0 {
        return Err(Error::Option(
            "scatter probe: repetitions, count and run must be ≥ 1".into(),
        ));
    }
    let words = target_words(gpu, spec.target_bytes);
    let native = gpu.caps.f32_atomics && spec.native_atomics && !spec.gather;
    let mut defines = Vec::new();
    if spec.gather {
        defines.push("GATHER");
    } else if native {
        defines.push("F32_ATOMIC");
    }
    let wg = 256u32;
    let groups = spec
        .count
        .div_ceil(wg)
        .min(gpu.caps.max_workgroups_per_dimension)
        .min(65_536);
    let kernel = gpu.kernel(&KernelSpec {
        name: "runtime/scatter",
        defines,
        constants: vec![("WG", wg as f64), ("RUN", spec.run as f64)],
        bindings: &[Binding::Uniform, Binding::ReadWrite, Binding::ReadWrite],
    })?;
    let target = GpuBuffer::<f32>::zeroed(gpu, "scatter.target", words as usize)?;
    let sink = GpuBuffer::<f32>::zeroed(gpu, "scatter.sink", (groups * wg) as usize)?;
    let params = gpu.uniform(
        "scatter.params",
        &ScatterParams {
            count: spec.count,
            stride: groups * wg,
            mask: (words - 1) as u32,
            seed: 0x5ca7_7e12,
        },
    );
    let bg = kernel.bind(gpu, &[&params, target.raw(), sink.raw()])?;
    let mut times = Vec::new();
    let mut runs = 0u64;
    crate::gpu::median_warm(gpu, reps, || {
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bg.clone(), [groups, 1, 1])?;
        let t = batch.submit_timed()?;
        times.push(t.seconds);
        runs += 1;
        Ok(t)
    })?;
    if !spec.gather {
        let sum: f64 = target.read(gpu)?.iter().map(|&v| v as f64).sum();
        let want = runs as f64 * spec.count as f64;
        if sum != want {
            return Err(Error::Check {
                kernel: "runtime/scatter".into(),
                message: format!("the target sums to {sum}, not the {want} adds made"),
            });
        }
    }
    times.drain(..times.len() - reps);
    times.sort_by(f64::total_cmp);
    let rate = |t: f64| spec.count as f64 / t / 1e9;
    Ok(ScatterRate {
        op: if spec.gather { "load" } else { "add" }.into(),
        native,
        target_bytes: words * 4,
        run: spec.run,
        count: spec.count,
        gops: rate(times[0]),
        gops_median: rate(times[times.len() / 2]),
    })
}

/// `wgsparse roofline`'s scatter rows: adds and loads at random words of a 4 MiB array
/// (L2-resident on discrete GPUs) and of a `large_bytes` one, and adds in runs of 8 words.
pub fn measure_suite(
    gpu: &Gpu,
    large_bytes: u64,
    count: u32,
    reps: usize,
) -> Result<Vec<ScatterRate>> {
    let mut out = Vec::new();
    for target_bytes in [4 << 20, large_bytes] {
        for (run, gather) in [(1, false), (8, false), (1, true)] {
            let spec = ScatterSpec {
                target_bytes,
                count,
                run,
                gather,
                native_atomics: true,
            };
            out.push(measure_scatter(gpu, spec, reps)?);
        }
    }
    Ok(out)
}
