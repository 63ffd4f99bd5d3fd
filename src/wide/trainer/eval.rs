//! Validation on the device: scores, the loss sums and the per-class histograms behind the
//! AUC, computed each epoch; and the exact host metrics they are tested against.

use serde::Serialize;

use super::Trainer;
use crate::gpu::{Batch, GpuBuffer};
use crate::wide::engine::{metrics_kernel, DeviceChunks, Schedule, AUC_BINS};
use crate::wide::metrics::{auc, auc_from_histograms};
use crate::Result;

/// Validation data on the device.
pub(super) struct Valid {
    pub(super) data: DeviceChunks,
    pub(super) config: wgpu::Buffer,
    pub(super) sched: Schedule,
    pub(super) labels: Vec<f32>,
    pub(super) metrics: wgpu::Buffer,
    pub(super) hist: GpuBuffer<u32>,
    pub(super) partial: GpuBuffer<f32>,
}

/// Validation metrics.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Eval {
    /// Mean of the model's own loss.
    pub loss: f64,
    /// Mean log loss log(1 + e^{−yŷ}).
    pub logloss: f64,
    /// AUC (`None` with one class only).
    pub auc: Option<f64>,
    /// The AUC's error bound: the exact AUC lies within ± this of `auc` (0 when computed
    /// exactly on the host; the binning's tie bound when computed from GPU histograms).
    pub auc_bound: f64,
}

impl Trainer<'_> {
    /// (ŷ, ℓ) of every validation sample, computed on the GPU; `None` without validation data.
    pub fn predict_valid(&self) -> Result<Option<Vec<f32>>> {
        let Some(v) = &self.valid else {
            return Ok(None);
        };
        let mut batch = Batch::new(self.gpu);
        self.record_predict(&mut batch, v)?;
        batch.submit()?;
        Ok(Some(v.data.out.read(self.gpu)?))
    }

    fn record_predict(&self, batch: &mut Batch, v: &Valid) -> Result<()> {
        let gpu = self.gpu;
        v.data.out.fill(gpu, f32::NAN)?;
        let bg = self.kernels.predict.bind_ranges(
            gpu,
            &[
                v.config.as_entire_buffer_binding(),
                v.sched.entry(0),
                v.data.meta.raw().as_entire_buffer_binding(),
                v.data.sedge.raw().as_entire_buffer_binding(),
                v.data.fedge.raw().as_entire_buffer_binding(),
                self.params.raw().as_entire_buffer_binding(),
                self.grad.raw().as_entire_buffer_binding(),
                v.data.out.raw().as_entire_buffer_binding(),
            ],
        )?;
        batch.dispatch(
            &self.kernels.predict,
            bg,
            gpu.grid(v.data.host.n_chunks as u32)?,
        )
    }

    /// Validation metrics computed on the GPU: ŷ and ℓ per sample, the loss sums per
    /// workgroup and per-class score histograms (16,384 bins over ŷ ∈ [−16, 16]) in one
    /// submission; the host reads back the histograms and sums and takes the AUC from them
    /// ([`crate::wide::metrics::auc_from_histograms`], with its error bound). `None` without
    /// validation data.
    pub fn evaluate(&self) -> Result<Option<Eval>> {
        let Some(v) = &self.valid else {
            return Ok(None);
        };
        let gpu = self.gpu;
        v.hist.fill(gpu, 0)?;
        v.partial.fill(gpu, f32::NAN)?;
        let mut batch = Batch::new(gpu);
        self.record_predict(&mut batch, v)?;
        let k = metrics_kernel(gpu)?;
        let bg = k.bind(
            gpu,
            &[
                &v.metrics,
                v.data.out.raw(),
                v.data.meta.raw(),
                v.hist.raw(),
                v.partial.raw(),
            ],
        )?;
        batch.dispatch(&k, bg, gpu.grid((v.partial.len() / 2) as u32)?)?;
        batch.submit()?;
        let hist = v.hist.read(gpu)?;
        let partial = v.partial.read(gpu)?;
        let n = v.labels.len().max(1) as f64;
        let loss = partial.iter().step_by(2).map(|&x| x as f64).sum::<f64>() / n;
        let logloss = partial
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&x| x as f64)
            .sum::<f64>()
            / n;
        let bins = AUC_BINS as usize;
        let a = auc_from_histograms(&hist[..bins], &hist[bins..]);
        Ok(Some(Eval {
            loss,
            logloss,
            auc: a.map(|a| a.0),
            auc_bound: a.map_or(0.0, |a| a.1),
        }))
    }

    /// [`Trainer::evaluate`] with the exact AUC and sums on the host from ŷ and ℓ read back
    /// (`auc_bound` 0).
    pub fn evaluate_exact(&self) -> Result<Option<Eval>> {
        let Some(out) = self.predict_valid()? else {
            return Ok(None);
        };
        let labels = &self.valid.as_ref().expect("validation data").labels;
        let n = labels.len().max(1) as f64;
        let scores: Vec<f32> = out.iter().step_by(2).copied().collect();
        let loss: f64 = out
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&l| l as f64)
            .sum::<f64>()
            / n;
        let logloss: f64 = scores
            .iter()
            .zip(labels)
            .map(|(&s, &y)| crate::wide::Loss::Logistic.eval(s as f64, y as f64).0)
            .sum::<f64>()
            / n;
        Ok(Some(Eval {
            loss,
            logloss,
            auc: auc(&scores, labels),
            auc_bound: 0.0,
        }))
    }
}
