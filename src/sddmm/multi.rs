//! SDDMM over several devices: S cut into parts of equal nonzeros ([`partition`]), one
//! part per device, each with its own [`Plan`] (tiling and variant resolved, or tuned, for
//! its part and its adapter) and its own [`Resident`] operands. An iteration writes each
//! device's rows of A and B, runs every device at once (one host thread per device: wgpu has
//! one queue per device, and the devices overlap their copies and kernels with each other's)
//! and, when asked, reads P back in S's CSR order; otherwise each part's output stays on its
//! device for a caller who keeps iterating (see `multi_iter.rs`).

use serde::Serialize;

use super::partition::{partition, Cut, Part};
use super::readback::ReadMode;
use super::resident::{check_host_shapes, Resident, WriteMode};
use super::{tune, Options, Plan};
use crate::gpu::{each, host_cores, Gpu, GpuBuffer, GpuTime};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};

/// One device's share: its part of S and the plan built for it there (`None` when the part
/// has no nonzeros).
pub(super) struct Shard<'g> {
    pub(super) gpu: &'g Gpu,
    pub(super) part: Part,
    pub(super) plan: Option<Plan>,
}

/// A prepared SDDMM of one S over several devices.
pub struct MultiPlan<'g> {
    /// Rows of S.
    pub nrows: usize,
    /// Columns of S.
    pub ncols: usize,
    /// K, the inner dimension.
    pub k: usize,
    /// Nonzeros of S.
    pub nnz: usize,
    /// How S was cut.
    pub cut: Cut,
    pub(super) shards: Vec<Shard<'g>>,
}

/// Operands resident on the devices: each device's rows of A and B, its output and their
/// staging buffers ([`Resident`]; `None` for an empty part).
pub struct MultiOperands {
    pub(super) per_device: Vec<Option<Resident>>,
    /// How an iteration reads P back (every device alike).
    pub(super) read: ReadMode,
}

impl MultiOperands {
    /// Device `d`'s output: its part's values in the part's CSR order (`None` for an empty
    /// part). For callers who keep P where it was computed.
    pub fn output(&self, d: usize) -> Option<&GpuBuffer<f32>> {
        self.device(d).map(Resident::output)
    }

    /// How an iteration reads P back.
    pub fn read_mode(&self) -> ReadMode {
        self.read
    }

    /// Device `d`'s resident operands (`None` for an empty part).
    pub fn device(&self, d: usize) -> Option<&Resident> {
        self.per_device.get(d)?.as_ref()
    }
}

/// What one device holds and runs.
#[derive(Clone, Debug, Serialize)]
pub struct ShardInfo {
    /// The device's adapter.
    pub adapter: String,
    /// Nonzeros of its part.
    pub nnz: usize,
    /// Rows of A it reads (start, end).
    pub rows: (usize, usize),
    /// Rows of B it reads (start, end).
    pub cols: (usize, usize),
    /// The kernel and configuration its plan resolved to (`—` for an empty part).
    pub kernel: String,
}

impl<'g> MultiPlan<'g> {
    /// Validates `s`, cuts it into one part per device along `cut` and builds each part's
    /// plan on its device (all devices at once). With `tuned`, a part whose options ask for
    /// [`super::Variant::Auto`] gets its device's tuned configuration (the per-adapter cache).
    pub fn new(
        gpus: &'g [Gpu],
        s: &Csr,
        k: usize,
        options: &Options,
        cut: Cut,
        tuned: bool,
    ) -> Result<Self> {
        s.validate()?;
        if gpus.is_empty() {
            return Err(Error::Option("a multi-device SDDMM needs a device".into()));
        }
        let parts = partition(s, gpus.len(), cut)?;
        let mut shards: Vec<Shard<'g>> = gpus
            .iter()
            .zip(parts)
            .map(|(gpu, part)| Shard {
                gpu,
                part,
                plan: None,
            })
            .collect();
        let plans = each(&shards, |_, shard| {
            if shard.part.s.nnz() == 0 {
                return Ok(None);
            }
            let plan = if tuned && options.variant == super::Variant::Auto {
                tune::autotuned_plan_with(shard.gpu, &shard.part.s, k, options, None)?
            } else {
                Plan::build(shard.gpu, &shard.part.s, k, options.clone(), None)?
            };
            Ok(Some(plan))
        })?;
        for (shard, plan) in shards.iter_mut().zip(plans) {
            shard.plan = plan;
        }
        Ok(MultiPlan {
            nrows: s.nrows,
            ncols: s.ncols,
            k,
            nnz: s.nnz(),
            cut,
            shards,
        })
    }

    /// What each device holds and runs.
    pub fn shards(&self) -> Vec<ShardInfo> {
        self.shards
            .iter()
            .map(|sh| ShardInfo {
                adapter: sh.gpu.caps.adapter_name.clone(),
                nnz: sh.part.s.nnz(),
                rows: (sh.part.rows.start, sh.part.rows.end),
                cols: (sh.part.cols.start, sh.part.cols.end),
                kernel: sh.plan.as_ref().map_or("—".into(), |p| {
                    format!(
                        "{}{}",
                        p.config.variant.name(),
                        crate::report::demo::describe(&p.config)
                    )
                }),
            })
            .collect()
    }

    /// Host threads each device's operand and output copies may use: the host's cores
    /// shared out over the devices.
    pub(super) fn threads(&self) -> usize {
        (host_cores() / self.shards.len().max(1)).max(1)
    }

    /// Allocates each device's operands (A and B rows, output, staging buffers; all devices
    /// at once) and writes A (M×K) and B (N×K) into them. The outputs are not poisoned
    /// ([`MultiPlan::poison`]).
    pub fn upload(&self, a: &Dense, b: &Dense) -> Result<MultiOperands> {
        self.upload_with(a, b, WriteMode::Staged)
    }

    /// [`MultiPlan::upload`] with later writes of A and B done as `mode` says.
    pub fn upload_with(&self, a: &Dense, b: &Dense, mode: WriteMode) -> Result<MultiOperands> {
        self.upload_modes(a, b, mode, ReadMode::Whole)
    }

    /// [`MultiPlan::upload_with`] with P read back by an iteration as `read` says
    /// ([`MultiPlan::iterate`], its timings and breakdown; [`MultiPlan::gather`] and
    /// [`MultiPlan::read_parts`] read each part whole). [`ReadMode::Pieced`] needs the row
    /// cut: under the column cut P's row i is every part's row i, so the gather needs every
    /// part mapped at once.
    pub fn upload_modes(
        &self,
        a: &Dense,
        b: &Dense,
        mode: WriteMode,
        read: ReadMode,
    ) -> Result<MultiOperands> {
        if self.cut == Cut::Columns && read != ReadMode::Whole {
            return Err(Error::Option(
                "a pieced read-back needs the row cut: the column cut's gather interleaves \
                 every part's rows, so it reads each part whole"
                    .into(),
            ));
        }
        check_host_shapes((self.nrows, self.ncols, self.k), a, b)?;
        let threads = self.threads();
        let per_device = each(&self.shards, |_, sh| {
            sh.plan
                .as_ref()
                .map(|plan| {
                    Resident::with_modes(
                        sh.gpu,
                        plan,
                        sh.part.rows.clone(),
                        sh.part.cols.clone(),
                        threads,
                        mode,
                        read,
                    )
                })
                .transpose()
        })?;
        let ops = MultiOperands { per_device, read };
        self.write(&ops, a, b)?;
        Ok(ops)
    }

    /// Sets every device's output to NaN, so that a check finds values a run leaves unwritten.
    pub fn poison(&self, ops: &MultiOperands) -> Result<()> {
        for (sh, o) in self.shards.iter().zip(&ops.per_device) {
            if let Some(o) = o {
                o.poison(sh.gpu)?;
            }
        }
        Ok(())
    }

    /// Lays every device's rows of A and B out in its staging buffers (all devices at once,
    /// each value checked finite on the way; overlapped, each piece's copy into the spare
    /// operands queued as it is laid out). Either every device stages or the call fails and
    /// none of them is flushed, so every device still runs on its current operands.
    pub(super) fn stage(&self, ops: &MultiOperands, a: &Dense, b: &Dense) -> Result<()> {
        check_host_shapes((self.nrows, self.ncols, self.k), a, b)?;
        each(&self.shards, |d, sh| match ops.device(d) {
            Some(o) => o.stage(sh.gpu, a, b),
            None => Ok(()),
        })
        .map(|_| ())
    }

    /// Writes new A and B over operands from [`MultiPlan::upload`] in place: each device's
    /// rows, through its reused staging buffers, no allocation (an iterating caller's step:
    /// ALS and LDA call SDDMM with new A and B on one S). Queued behind the devices' work;
    /// does not wait. A non-finite value fails before any device receives anything.
    pub fn write(&self, ops: &MultiOperands, a: &Dense, b: &Dense) -> Result<()> {
        self.stage(ops, a, b)?;
        for (sh, o) in self.shards.iter().zip(&ops.per_device) {
            if let Some(o) = o {
                o.flush(sh.gpu)?;
            }
        }
        Ok(())
    }

    /// Runs every device on its resident operands and waits for all of them; each part's
    /// output stays on its device ([`MultiOperands::output`]).
    pub fn run(&self, ops: &MultiOperands) -> Result<()> {
        each(&self.shards, |d, sh| match (&sh.plan, ops.device(d)) {
            (Some(plan), Some(o)) => plan.run(sh.gpu, o.a(), o.b(), o.output()),
            _ => Ok(()),
        })
        .map(|_| ())
    }

    /// Reads every device's output back (all at once), each in its part's CSR order: P left
    /// in parts, for a caller who wants it on the host but not gathered.
    pub fn read_parts(&self, ops: &MultiOperands) -> Result<Vec<Vec<f32>>> {
        each(&self.shards, |d, sh| match ops.device(d) {
            Some(o) => Ok(o.view(o.fetch(sh.gpu)?)?.to_vec()),
            None => Ok(Vec::new()),
        })
    }

    /// Uploads, runs and gathers: P's values in S's CSR order (outputs poisoned first, so a
    /// value no kernel wrote reads as NaN).
    pub fn run_host(&self, a: &Dense, b: &Dense) -> Result<Vec<f32>> {
        let ops = self.upload(a, b)?;
        self.poison(&ops)?;
        self.run(&ops)?;
        self.gather(&ops)
    }

    /// Each device's GPU time for its part (median of `reps` after clock warm-up, all devices
    /// timed at once); zero for an empty part.
    pub fn time_devices(&self, ops: &MultiOperands, reps: usize) -> Result<Vec<GpuTime>> {
        each(&self.shards, |d, sh| match (&sh.plan, ops.device(d)) {
            (Some(plan), Some(o)) => plan.time(sh.gpu, o.a(), o.b(), o.output(), reps),
            _ => Ok(GpuTime {
                seconds: 0.0,
                from_timestamps: true,
            }),
        })
    }
}
