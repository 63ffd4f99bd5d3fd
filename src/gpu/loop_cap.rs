//! The loop cap of software devices. llvmpipe (lavapipe's Vulkan device) ends every loop of a
//! shader invocation once that invocation has run 65,535 loop iterations in all, silently: a
//! kernel whose invocations loop longer computes a short result. The cap is measured, not
//! assumed from the adapter's name: when a device that is neither a discrete nor an
//! integrated GPU opens, [`probe`] runs one invocation of a loop of [`PROBE_TRIPS`] and keeps
//! the count it completed when that falls short (one tiny dispatch: a few milliseconds on
//! lavapipe, measured by `tests/loop_cap.rs`). GPUs are not probed and have no cap.
//! Launch models that size per-invocation work keep it under [`budget`].

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::Result;

/// Iterations the probe asks for: above llvmpipe's 65,535.
pub const PROBE_TRIPS: u32 = 100_000;

/// Whether a device of this type (as [`crate::gpu::Caps::device_type`] spells it) is probed:
/// everything but discrete and integrated GPUs.
pub fn probed(device_type: &str) -> bool {
    !matches!(device_type, "DiscreteGpu" | "IntegratedGpu")
}

/// Runs the probe on `gpu`: `Some(iterations completed)` when the device stopped the loop
/// short of [`PROBE_TRIPS`], `None` when it ran it whole.
pub fn probe(gpu: &Gpu) -> Result<Option<u32>> {
    let kernel = gpu.kernel(&KernelSpec {
        name: "runtime/loop_cap",
        defines: vec![],
        constants: vec![],
        bindings: &[Binding::ReadWrite],
    })?;
    // state[1] starts at a value the probe cannot store, so a dispatch that never ran is an
    // error rather than a cap of 0.
    let state = GpuBuffer::upload(gpu, "loop_cap.state", &[PROBE_TRIPS, u32::MAX])?;
    let mut batch = Batch::new(gpu);
    let bg = kernel.bind(gpu, &[state.raw()])?;
    batch.dispatch(&kernel, bg, [1, 1, 1])?;
    batch.submit()?;
    let done = state.read(gpu)?[1];
    if done > PROBE_TRIPS {
        return Err(crate::Error::Gpu {
            kernel: "runtime/loop_cap".into(),
            message: format!("the loop-cap probe stored {done} (it never ran?)"),
        });
    }
    Ok((done < PROBE_TRIPS).then_some(done))
}

/// Loop iterations one invocation may be planned to run on a device with cap `cap`: half the
/// cap (the estimates count entries per row on average, and compare-exchange loops retry
/// under contention), or no bound without a cap.
pub fn budget(cap: Option<u32>) -> Option<u64> {
    cap.map(|c| (c / 2).max(1) as u64)
}

/// Whether `iterations` loop iterations per invocation fit the budget of a device with cap
/// `cap` (always without one).
pub fn fits(cap: Option<u32>, iterations: u64) -> bool {
    budget(cap).is_none_or(|b| iterations <= b)
}

/// The refusal of `what` (a kernel, with whatever sizes matter), whose invocations would run
/// about `iterations` loop iterations on `caps`' device, over its budget: an option error
/// (tuners skip the candidate), naming the count, the budget and the cap.
pub fn over_budget(caps: &crate::Caps, what: &str, iterations: u64) -> crate::Error {
    crate::Error::Option(format!(
        "{what}: about {iterations} loop iterations per invocation, over {}, half the loop cap \
         of {} ({} iterations per invocation, after which it silently ends loops and computes \
         a short result)",
        budget(caps.loop_cap).unwrap_or(u64::MAX),
        caps.adapter_name,
        caps.loop_cap.unwrap_or(u32::MAX),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_software_devices_are_probed() {
        assert!(!probed("DiscreteGpu"));
        assert!(!probed("IntegratedGpu"));
        assert!(probed("Cpu"));
        assert!(probed("Other"));
        assert!(probed("VirtualGpu"));
    }

    #[test]
    fn the_budget_is_half_the_cap_and_none_without_one() {
        assert_eq!(budget(None), None);
        assert_eq!(budget(Some(65_535)), Some(32_767));
        assert_eq!(budget(Some(1)), Some(1));
        assert!(fits(None, u64::MAX));
        assert!(fits(Some(65_535), 32_767));
        assert!(!fits(Some(65_535), 32_768));
    }
}
