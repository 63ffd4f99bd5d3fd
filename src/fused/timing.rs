//! Running a plan and timing it.

use super::{HostOp, Op, Plan};
use crate::gpu::{timed_warm_report, Batch, Gpu, GpuBuffer, GpuTime, WarmUp};
use crate::Result;

impl Plan {
    /// Runs on device vectors and waits.
    pub fn run(&self, gpu: &Gpu, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
        let mut batch = Batch::new(gpu);
        self.record(&mut batch, op, w)?;
        batch.submit()
    }

    /// Uploads host vectors, runs into a NaN-poisoned w and reads it back.
    pub fn run_host(&self, gpu: &Gpu, op: &HostOp) -> Result<Vec<f32>> {
        let d = op.upload(gpu, self.n)?;
        self.run(gpu, &d.op(), &d.w)?;
        d.w.read(gpu)
    }

    /// GPU time of one run: the median of `reps` timed submissions after warm-up
    /// ([`crate::gpu::median_warm`]).
    pub fn time(&self, gpu: &Gpu, op: &Op, w: &GpuBuffer<f32>, reps: usize) -> Result<GpuTime> {
        self.time_runs(gpu, op, w, reps, 1)
    }

    /// [`Plan::time`] with `runs` runs back to back in each timed submission
    /// ([`Plan::time_report`]).
    pub fn time_runs(
        &self,
        gpu: &Gpu,
        op: &Op,
        w: &GpuBuffer<f32>,
        reps: usize,
        runs: usize,
    ) -> Result<GpuTime> {
        let (times, _) = self.time_report(gpu, op, w, reps, runs)?;
        Ok(times[times.len() / 2])
    }

    /// One timed submission of `runs` runs back to back (at least 1), the time per run.
    pub fn time_once(
        &self,
        gpu: &Gpu,
        op: &Op,
        w: &GpuBuffer<f32>,
        runs: usize,
    ) -> Result<GpuTime> {
        let runs = runs.max(1);
        let mut batch = Batch::new(gpu);
        for _ in 0..runs {
            self.record(&mut batch, op, w)?;
        }
        let t = batch.submit_timed()?;
        Ok(GpuTime {
            seconds: t.seconds / runs as f64,
            ..t
        })
    }

    /// [`Plan::time`]'s timed runs (fastest first) and what its warm-up did, each timed
    /// submission holding `runs` runs back to back (its time divided by them; 1: a run per
    /// submission, the GPU idle while the host waits on each). Several keep the GPU busy
    /// between runs, as a solver's batch does.
    pub fn time_report(
        &self,
        gpu: &Gpu,
        op: &Op,
        w: &GpuBuffer<f32>,
        reps: usize,
        runs: usize,
    ) -> Result<(Vec<GpuTime>, WarmUp)> {
        timed_warm_report(gpu, reps, || self.time_once(gpu, op, w, runs))
    }
}
