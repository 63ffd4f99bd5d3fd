//! Clock warm-up before timed work whose runs cannot simply be repeated (a training epoch
//! moves the model): GPUs scale their clocks with load, so the first timed epochs after host
//! work (data generation, planning, a CPU check) run at a fraction of the settled clock (an
//! H200's first MF epoch at about a third of the next ones' rate). [`warm_clocks`] keeps the
//! whole GPU busy with a spin kernel until its timings settle, as [`median_warm`] does.

use crate::gpu::{median_warm, Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::Result;

/// Invocations per workgroup of the spin kernel.
const WG: u32 = 256;
/// Workgroups per dispatch: several per compute unit on any current GPU.
const GROUPS: u32 = 4096;
/// Multiply-adds per invocation: about a millisecond per dispatch on an H200.
const ROUNDS: u32 = 1 << 14;

/// Runs the spin kernel back to back until the clocks have settled (see [`median_warm`]:
/// at least its `WARM_UP_SECONDS`, `COLD_WARM_UP_SECONDS` after idling, on a GPU; two short
/// runs on a CPU device) and returns the wall-clock seconds spent.
pub fn warm_clocks(gpu: &Gpu) -> Result<f64> {
    let start = std::time::Instant::now();
    let cpu = gpu.caps.device_type == "Cpu";
    // A CPU device has no clock scaling: one workgroup keeps the two runs short.
    let (groups, rounds) = if cpu { (1, 64) } else { (GROUPS, ROUNDS) };
    let kernel = gpu.kernel(&KernelSpec {
        name: "runtime/spin",
        defines: vec![],
        constants: vec![("WG", WG as f64), ("ROUNDS", rounds as f64)],
        bindings: &[Binding::ReadWrite],
    })?;
    let sink = GpuBuffer::<f32>::zeroed(gpu, "warm.sink", (WG * 64) as usize)?;
    median_warm(gpu, 1, || {
        let mut batch = Batch::new(gpu);
        let bg = kernel.bind(gpu, &[sink.raw()])?;
        batch.dispatch(&kernel, bg, [groups, 1, 1])?;
        batch.submit_timed()
    })?;
    Ok(start.elapsed().as_secs_f64())
}
