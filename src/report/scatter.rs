//! The scatter probe: how many atomic adds (or plain loads) at random words the device serves
//! per second, in global memory and in a workgroup's memory: the denominator of the kernels
//! whose cost is scattered adds (the wide engine's Apply, the fused pattern's scatter into w
//! and its workgroup copy of w) as copy bandwidth is of the streaming ones.

use bytemuck::{Pod, Zeroable};
use serde::Serialize;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::{Error, Result};

/// What each operation of a scatter run does at its word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterOp {
    /// An f32 atomic add: native where the spec asks for it and the device has it (global:
    /// `SHADER_FLOAT32_ATOMIC`; workgroup: [`crate::gpu::Caps::wg_f32_atomics`]), else the
    /// compare-exchange loop on the bit pattern.
    Add,
    /// A native u32 atomic add.
    AddU32,
    /// A plain f32 load.
    Load,
}

impl ScatterOp {
    fn name(self) -> &'static str {
        match self {
            ScatterOp::Add => "add",
            ScatterOp::AddU32 => "add-u32",
            ScatterOp::Load => "load",
        }
    }
}

/// Where the words are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// A storage buffer.
    Global,
    /// A workgroup array, one per workgroup (as the fused kernel's copy of w).
    Workgroup,
}

/// One scatter measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ScatterRate {
    /// "add" (f32 atomic add), "add-u32" (u32 atomic add) or "load" (plain f32 load).
    pub op: String,
    /// "global" or "workgroup".
    pub memory: String,
    /// Whether f32 adds were native atomics (false: the compare-exchange loop, or not f32
    /// adds).
    pub native: bool,
    /// Bytes of the array the words are drawn from (per workgroup in workgroup memory).
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
    flush: u32,
    _pad: [u32; 3],
}

/// What one scatter measurement does.
#[derive(Clone, Copy, Debug)]
pub struct ScatterSpec {
    /// Target bytes, rounded down to a power of two words: at least 1,024 words within one
    /// storage binding (global), or 64 words within the workgroup storage limit (workgroup).
    pub target_bytes: u64,
    /// Operations per run.
    pub count: u32,
    /// Consecutive words per random run (≥ 1).
    pub run: u32,
    /// The operation.
    pub op: ScatterOp,
    /// Where the words are.
    pub memory: Memory,
    /// Native f32 atomic adds when the device has them (global: `SHADER_FLOAT32_ATOMIC`;
    /// workgroup: [`crate::gpu::Caps::wg_f32_atomics`]), else the compare-exchange loop.
    pub native_atomics: bool,
}

/// Workgroup size of both probes.
const WG: u32 = 256;
/// Operations per invocation in the workgroup probe, so the workgroup's setup (clearing its
/// array) is small beside them.
const WG_OPS_PER_INVOCATION: u32 = 256;

/// Words of the target: a power of two within the memory's limit and `bytes`.
fn target_words(gpu: &Gpu, spec: &ScatterSpec) -> u64 {
    let (limit, least) = match spec.memory {
        Memory::Global => (
            gpu.caps
                .max_storage_binding_bytes
                .min(gpu.caps.max_buffer_bytes),
            1024,
        ),
        Memory::Workgroup => (gpu.caps.max_workgroup_storage_bytes as u64, 64),
    };
    let words = (spec.target_bytes.min(limit) / 4).clamp(least, 1 << 31);
    1 << (63 - words.leading_zeros())
}

/// Times `spec` `reps` times after the clocks have warmed, then checks one more run: every
/// add landed (the target, cleared first, sums to the adds made; each add is 1 and every word
/// stays an exact integer).
pub fn measure_scatter(gpu: &Gpu, spec: ScatterSpec, reps: usize) -> Result<ScatterRate> {
    if reps == 0 || spec.count == 0 || spec.run == 0 {
        return Err(Error::Option(
            "scatter probe: repetitions, count and run must be ≥ 1".into(),
        ));
    }
    let words = target_words(gpu, &spec);
    // Every word must stay an exact f32 integer (≤ 2²⁴) for the check: a 4× margin over the
    // mean adds per word.
    if spec.op == ScatterOp::Add && spec.count as u64 > words << 22 {
        return Err(Error::Option(format!(
            "scatter probe: {} adds into {words} words are too many to check exactly (at most \
             {})",
            spec.count,
            words << 22
        )));
    }
    let workgroup = spec.memory == Memory::Workgroup;
    let native = spec.native_atomics
        && spec.op == ScatterOp::Add
        && if workgroup {
            gpu.caps.wg_f32_atomics
        } else {
            gpu.caps.f32_atomics
        };
    let mut defines = Vec::new();
    match spec.op {
        ScatterOp::Load => defines.push("GATHER"),
        ScatterOp::AddU32 => defines.push("U32"),
        ScatterOp::Add => {
            // The workgroup probe's flush to the global target may use native adds either way.
            if (native && !workgroup) || (workgroup && gpu.caps.f32_atomics) {
                defines.push("F32_ATOMIC");
            }
            if native && workgroup {
                defines.push(crate::gpu::WG_F32_NATIVE);
            }
        }
    }
    let per_invocation = if workgroup { WG_OPS_PER_INVOCATION } else { 1 };
    let groups = spec
        .count
        .div_ceil(WG * per_invocation)
        .min(gpu.caps.max_workgroups_per_dimension)
        .min(65_536);
    let mut constants = vec![("WG", WG as f64), ("RUN", spec.run as f64)];
    if workgroup {
        constants.push(("WORDS", words as f64));
    }
    let kernel = gpu.kernel(&KernelSpec {
        name: if workgroup {
            "runtime/scatter_wg"
        } else {
            "runtime/scatter"
        },
        defines,
        constants,
        bindings: &[Binding::Uniform, Binding::ReadWrite, Binding::ReadWrite],
    })?;
    let target = GpuBuffer::<u32>::zeroed(gpu, "scatter.target", words as usize)?;
    let sink = GpuBuffer::<f32>::zeroed(gpu, "scatter.sink", (groups * WG) as usize)?;
    let bind = |flush: bool| -> Result<wgpu::BindGroup> {
        let params = ScatterParams {
            count: spec.count,
            stride: groups * WG,
            mask: (words - 1) as u32,
            seed: 0x5ca7_7e12,
            flush: flush as u32,
            _pad: [0; 3],
        };
        let p = gpu.uniform("scatter.params", &params);
        kernel.bind(gpu, &[&p, target.raw(), sink.raw()])
    };
    // Timed runs leave the workgroup probe's words in workgroup memory (its rate alone).
    let timed = bind(!workgroup)?;
    let times = crate::gpu::timed_warm(gpu, reps, || {
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, timed.clone(), [groups, 1, 1])?;
        batch.submit_timed()
    })?;
    if spec.op != ScatterOp::Load {
        target.fill(gpu, 0)?;
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bind(true)?, [groups, 1, 1])?;
        batch.submit()?;
        check_lands(&kernel, &target.read(gpu)?, spec)?;
    }
    let rate = |t: f64| spec.count as f64 / t / 1e9;
    Ok(ScatterRate {
        op: spec.op.name().into(),
        memory: if workgroup { "workgroup" } else { "global" }.into(),
        native,
        target_bytes: words * 4,
        run: spec.run,
        count: spec.count,
        gops: rate(times[0].seconds),
        gops_median: rate(times[times.len() / 2].seconds),
    })
}

/// Checks the target words of one run (cleared before it) sum to the run's adds.
fn check_lands(kernel: &Kernel, words: &[u32], spec: ScatterSpec) -> Result<()> {
    let sum: f64 = match spec.op {
        ScatterOp::AddU32 => words.iter().map(|&w| w as f64).sum(),
        _ => words.iter().map(|&w| f32::from_bits(w) as f64).sum(),
    };
    if sum != spec.count as f64 {
        return Err(Error::Check {
            kernel: kernel.label.clone(),
            message: format!("the target sums to {sum}, not the {} adds made", spec.count),
        });
    }
    Ok(())
}

/// `wgsparse roofline`'s scatter rows: in global memory, f32 adds and loads at random words
/// of a 4 MiB array (L2-resident on discrete GPUs) and of a `large_bytes` one, and adds in
/// runs of 8 words; in workgroup memory, f32 adds (compare-exchange, then native where the
/// device has them), u32 adds and loads at random words of a 16 KiB array (the fused kernel's
/// copy of w at n = 4,096) and f32 adds into 1 KiB (hot words shared by many invocations),
/// both kinds.
pub fn measure_suite(
    gpu: &Gpu,
    large_bytes: u64,
    count: u32,
    reps: usize,
) -> Result<Vec<ScatterRate>> {
    let mut specs = Vec::new();
    for target_bytes in [4 << 20, large_bytes] {
        for (run, op) in [
            (1, ScatterOp::Add),
            (8, ScatterOp::Add),
            (1, ScatterOp::Load),
        ] {
            specs.push((target_bytes, run, op, Memory::Global, true));
        }
    }
    for target_bytes in [16 << 10, 1 << 10] {
        specs.push((target_bytes, 1, ScatterOp::Add, Memory::Workgroup, false));
        if gpu.caps.wg_f32_atomics {
            specs.push((target_bytes, 1, ScatterOp::Add, Memory::Workgroup, true));
        }
    }
    for op in [ScatterOp::AddU32, ScatterOp::Load] {
        specs.push((16 << 10, 1, op, Memory::Workgroup, false));
    }
    specs
        .into_iter()
        .map(|(target_bytes, run, op, memory, native_atomics)| {
            let spec = ScatterSpec {
                target_bytes,
                count,
                run,
                op,
                memory,
                native_atomics,
            };
            measure_scatter(gpu, spec, reps)
        })
        .collect()
}
