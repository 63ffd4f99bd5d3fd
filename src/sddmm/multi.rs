//! SDDMM over several devices: S cut into parts of equal nonzeros ([`partition`]), one
//! part per device, each with its own [`Plan`] (tiling and variant resolved, or tuned, for
//! its part and its adapter). A run uploads each device's rows of A and B, runs every device
//! at once (one host thread per device: wgpu has one queue per device, and the devices
//! overlap their copies and kernels with each other's), and gathers P into S's CSR order, or
//! leaves each part's output on its device for a caller who keeps iterating.

use std::time::Instant;

use serde::Serialize;

use super::partition::{partition, Cut, Part};
use super::{tune, Options, Plan};
use crate::gpu::{Gpu, GpuBuffer, GpuTime};
use crate::sparse::{Csr, Dense, GpuDense};
use crate::{Error, Result};

/// One device's share: its part of S and the plan built for it there (`None` when the part
/// has no nonzeros).
struct Shard<'g> {
    gpu: &'g Gpu,
    part: Part,
    plan: Option<Plan>,
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
    shards: Vec<Shard<'g>>,
}

/// Operands resident on the devices: each device's rows of A and B and its output.
pub struct MultiOperands {
    per_device: Vec<Option<DeviceOperands>>,
}

struct DeviceOperands {
    a: GpuDense,
    b: GpuDense,
    out: GpuBuffer<f32>,
}

impl MultiOperands {
    /// Device `d`'s output: its part's values in the part's CSR order (`None` for an empty
    /// part). For callers who keep P where it was computed.
    pub fn output(&self, d: usize) -> Option<&GpuBuffer<f32>> {
        self.per_device.get(d)?.as_ref().map(|o| &o.out)
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

/// Runs `f` for every shard on its own thread and collects the results in shard order.
fn each<'g, T: Send>(
    shards: &[Shard<'g>],
    f: impl Fn(usize, &Shard<'g>) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = shards
            .iter()
            .enumerate()
            .map(|(d, shard)| {
                let f = &f;
                scope.spawn(move || f(d, shard))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a device thread panicked"))
            .collect()
    })
}

/// Rows `r` of a row-major matrix as a matrix of their own.
fn row_slice(m: &Dense, r: std::ops::Range<usize>) -> Dense {
    Dense {
        nrows: r.len(),
        ncols: m.ncols,
        data: m.data[r.start * m.ncols..r.end * m.ncols].to_vec(),
    }
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

    /// A (M×K) and B (N×K) fit S and K and hold finite values.
    fn check_operands(&self, a: &Dense, b: &Dense) -> Result<()> {
        super::check_shapes(
            (self.nrows, self.ncols, self.k),
            (a.nrows, a.ncols),
            (b.nrows, b.ncols),
        )?;
        a.validate()?;
        b.validate()
    }

    /// Uploads each device's rows of A (M×K) and B (N×K), with a NaN-poisoned output.
    pub fn upload(&self, a: &Dense, b: &Dense) -> Result<MultiOperands> {
        self.check_operands(a, b)?;
        let per_device = each(&self.shards, |_, sh| {
            if sh.plan.is_none() {
                return Ok(None);
            }
            let gpu = sh.gpu;
            Ok(Some(DeviceOperands {
                a: GpuDense::upload(gpu, &row_slice(a, sh.part.rows.clone()))?,
                b: GpuDense::upload(gpu, &row_slice(b, sh.part.cols.clone()))?,
                out: GpuBuffer::filled(gpu, "sddmm.multi.out", sh.part.s.nnz(), f32::NAN)?,
            }))
        })?;
        Ok(MultiOperands { per_device })
    }

    /// Writes new A and B over operands from [`MultiPlan::upload`] in place: each device's
    /// rows, no allocation (an iterating caller's step: ALS and LDA call SDDMM with new A and
    /// B on one S).
    pub fn write(&self, ops: &MultiOperands, a: &Dense, b: &Dense) -> Result<()> {
        self.check_operands(a, b)?;
        each(&self.shards, |d, sh| match &ops.per_device[d] {
            Some(o) => {
                o.a.write_rows(sh.gpu, a, sh.part.rows.clone())?;
                o.b.write_rows(sh.gpu, b, sh.part.cols.clone())
            }
            None => Ok(()),
        })
        .map(|_| ())
    }

    /// Runs every device on its resident operands and waits for all of them; each part's
    /// output stays on its device ([`MultiOperands::output`]).
    pub fn run(&self, ops: &MultiOperands) -> Result<()> {
        each(&self.shards, |d, sh| match (&sh.plan, &ops.per_device[d]) {
            (Some(plan), Some(o)) => plan.run(sh.gpu, &o.a, &o.b, &o.out),
            _ => Ok(()),
        })
        .map(|_| ())
    }

    /// Reads every device's output back (all at once) and gathers P in S's CSR order.
    pub fn gather(&self, ops: &MultiOperands) -> Result<Vec<f32>> {
        let parts = each(&self.shards, |d, sh| match &ops.per_device[d] {
            Some(o) => o.out.read(sh.gpu),
            None => Ok(Vec::new()),
        })?;
        let mut p = crate::limits::try_vec("the gathered SDDMM output", self.nnz, f32::NAN)?;
        for (sh, values) in self.shards.iter().zip(parts) {
            sh.part.scatter(&values, &mut p);
        }
        Ok(p)
    }

    /// Uploads, runs and gathers: P's values in S's CSR order.
    pub fn run_host(&self, a: &Dense, b: &Dense) -> Result<Vec<f32>> {
        let ops = self.upload(a, b)?;
        self.run(&ops)?;
        self.gather(&ops)
    }

    /// Each device's GPU time for its part (median of `reps` after clock warm-up, all devices
    /// timed at once); zero for an empty part.
    pub fn time_devices(&self, ops: &MultiOperands, reps: usize) -> Result<Vec<GpuTime>> {
        each(&self.shards, |d, sh| match (&sh.plan, &ops.per_device[d]) {
            (Some(plan), Some(o)) => plan.time(sh.gpu, &o.a, &o.b, &o.out, reps),
            _ => Ok(GpuTime {
                seconds: 0.0,
                from_timestamps: true,
            }),
        })
    }

    /// Wall-clock seconds of one whole iteration as an iterating caller sees it, the plans
    /// and device buffers reused: new A and B written into each device's rows
    /// ([`MultiPlan::write`]), run, read back and gathered (median of `reps`, after one
    /// untimed iteration).
    pub fn time_end_to_end(&self, a: &Dense, b: &Dense, reps: usize) -> Result<f64> {
        let ops = self.upload(a, b)?;
        let iteration = || -> Result<Vec<f32>> {
            self.write(&ops, a, b)?;
            self.run(&ops)?;
            self.gather(&ops)
        };
        iteration()?;
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            iteration()?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
