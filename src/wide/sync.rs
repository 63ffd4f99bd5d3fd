//! Sync mode's kernels: one flow and one apply dispatch per mini-batch (the stage-like
//! reference), or the persistent sync kernel, whose G workgroups take many mini-batches in
//! one dispatch and meet at a grid-wide barrier between each mini-batch's gradient and its
//! update (exact mini-batch SGD either way). This module names the choice and sizes G.

use crate::gpu::{Gpu, Residency};
use crate::{Error, Result};

/// How sync mode dispatches its mini-batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncKernel {
    /// The persistent kernel where [`crate::wide::Options::sync_groups`] or `sync_span` ask
    /// for it, else [`SyncKernel::Dispatch`]. The persistent kernel's grid barrier (G > 1)
    /// has not yet run on a discrete GPU, and a barrier that fails hangs the device, so it
    /// is opt-in until `benches/peers/wide_sync.sh` has checked it there; a software device
    /// runs the dispatches' workgroups in parallel anyway, and may end a persistent kernel's
    /// long loops early.
    #[default]
    Auto,
    /// Per mini-batch a `wide/flow` dispatch (the gradient) and a `wide/apply` dispatch
    /// (the update): 2 dispatches per mini-batch.
    Dispatch,
    /// `wide/flow` with PERSISTENT: G persistent workgroups take every mini-batch of a
    /// span (a part's, or [`crate::wide::Options::sync_span`] of them) in one dispatch,
    /// gradient and update of each separated by grid barriers.
    Persistent,
}

impl SyncKernel {
    /// The names the CLI's `--sync-kernel` takes.
    pub const NAMES: [&'static str; 3] = ["auto", "dispatch", "persistent"];

    /// The kernel's name (one of [`SyncKernel::NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            SyncKernel::Auto => "auto",
            SyncKernel::Dispatch => "dispatch",
            SyncKernel::Persistent => "persistent",
        }
    }

    /// Parses one of [`SyncKernel::NAMES`].
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "auto" => Ok(SyncKernel::Auto),
            "dispatch" => Ok(SyncKernel::Dispatch),
            "persistent" => Ok(SyncKernel::Persistent),
            other => Err(Error::Option(format!(
                "sync kernel {other:?}: expected one of {}",
                SyncKernel::NAMES.join(", ")
            ))),
        }
    }
}

/// The kernel `options` run: [`SyncKernel::Auto`] resolved (persistent where
/// `sync_groups`/`sync_span` are set, else dispatch).
pub fn resolve(options: &crate::wide::Options) -> SyncKernel {
    match options.sync_kernel {
        SyncKernel::Auto if options.sync_groups > 0 || options.sync_span > 0 => {
            SyncKernel::Persistent
        }
        SyncKernel::Auto => SyncKernel::Dispatch,
        k => k,
    }
}

/// Whether `gpu` may run a grid barrier across several workgroups: only a discrete GPU is
/// trusted to keep every resident-sized grid's workgroups running at once. Elsewhere (a
/// CPU device such as lavapipe runs workgroups on a small thread pool, one after another)
/// a workgroup spinning at the barrier could wait forever for one not yet started.
pub fn grid_barrier_allowed(gpu: &Gpu) -> bool {
    gpu.caps.device_type == "DiscreteGpu"
}

/// Workgroups of `invocations` invocations and `shared_bytes` of workgroup memory `gpu`
/// keeps resident at once, and its compute units ([`Residency`]: the units times the
/// workgroups one unit holds). The estimate does not count registers, which may hold fewer;
/// one workgroup per unit is resident whenever any is.
pub fn resident_groups(gpu: &Gpu, invocations: u32, shared_bytes: u32) -> (usize, usize) {
    let r = Residency::of(&gpu.caps);
    let units = r.units as usize;
    (
        units * r.groups_resident(invocations, shared_bytes) as usize,
        units,
    )
}

/// Most workgroups the grid barrier counts (its arrivals share a word with the generation:
/// 16 bits each).
pub const MAX_GROUPS: usize = 0xffff;

/// The persistent sync kernel's workgroups G: `asked` (0: every chunk of a mini-batch its
/// own workgroup, `batch_chunks`, at most one per compute unit, where the grid barrier is
/// allowed, else 1) with `(resident, units)` from [`resident_groups`]. Fails with
/// [`Error::Option`] when G > 1 is asked of an adapter that may not run the grid barrier
/// ([`grid_barrier_allowed`]) or exceeds `resident` (the barrier would wait for workgroups
/// that cannot start). An asked G between the units and `resident` relies on the estimate
/// (registers uncounted).
pub fn persistent_groups(
    gpu: &Gpu,
    asked: usize,
    batch_chunks: usize,
    (resident, units): (usize, usize),
) -> Result<usize> {
    let allowed = grid_barrier_allowed(gpu);
    let resident = resident.max(1);
    let units = units.clamp(1, resident);
    match asked {
        0 if allowed => Ok(batch_chunks.clamp(1, units.min(MAX_GROUPS))),
        0 | 1 => Ok(1),
        g if !allowed => Err(Error::Option(format!(
            "sync_groups {g}: the persistent sync kernel's grid barrier needs all {g} \
             workgroups running at once, which only a discrete GPU is trusted to do; {} is a \
             {} device: use sync_groups 1 (--sync-groups 1) or the dispatch sync kernel \
             (--sync-kernel dispatch)",
            gpu.caps.adapter_name, gpu.caps.device_type
        ))),
        g if g > MAX_GROUPS => Err(Error::Option(format!(
            "sync_groups {g}: the grid barrier counts at most {MAX_GROUPS} workgroups"
        ))),
        g if g > resident => Err(Error::Option(format!(
            "sync_groups {g}: more than the {resident} workgroups {} keeps resident at once \
             (`wgsparse calibrate` measures it; WGSPARSE_COMPUTE_UNITS and WGSPARSE_UNIT_* override); the grid barrier \
             would wait for workgroups that cannot start",
            gpu.caps.adapter_name
        ))),
        g => Ok(g),
    }
}
