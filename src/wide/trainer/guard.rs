//! The divergence guard of async plain reads ([`crate::wide::Options::read_guard`]): the
//! parameters copied on the device at each epoch's start, the epoch judged by its losses,
//! and a diverging epoch trained again from the copy with atomic reads.

use super::eval::Eval;
use super::Trainer;
use crate::gpu::{Batch, GpuBuffer};
use crate::wide::engine::Kernels;
use crate::wide::{FlowVariant, Options};
use crate::Result;

/// Whether a backend lets one buffer be bound twice in a dispatch, both bindings writable
/// (what plain reads do): wgpu's native backends (Vulkan, Metal, DX12) accept it; the
/// WebGPU specification (a browser's backend) and the GL backend are not relied on.
pub fn aliasing_allowed(backend: &str) -> bool {
    matches!(backend, "Vulkan" | "Metal" | "Dx12")
}

/// `options` with plain reads and writes off (atomic ones) unless async on a backend that
/// accepts their alias ([`aliasing_allowed`]; sync mode keeps its coherent-reads variant).
pub(super) fn reads_for_backend(backend: &str, mut options: Options) -> Options {
    if !options.sync && !aliasing_allowed(backend) {
        options.variant.plain_reads = false;
        options.variant.coherent_reads = false;
        options.variant.plain_writes = false;
        options.variant.cold_from = 0;
    }
    options
}

/// Whether an epoch diverged: a loss not finite, or the epoch's validation loss (its
/// training loss without validation data) above `reference` by more than the fraction
/// `rise` (no reference: only finiteness counts).
pub fn diverged(
    train_loss: f64,
    valid_loss: Option<f64>,
    reference: Option<f64>,
    rise: f64,
) -> bool {
    if !train_loss.is_finite() || valid_loss.is_some_and(|l| !l.is_finite()) {
        return true;
    }
    let now = valid_loss.unwrap_or(train_loss);
    reference.is_some_and(|r| now > r + rise * r.abs())
}

impl Trainer<'_> {
    /// Whether the guard watches this epoch: async, plain reads, a tolerance set.
    pub(super) fn guard_on(&self) -> bool {
        !self.options.sync && self.options.variant.plain_reads && self.options.read_guard.is_some()
    }

    /// Records the copy of the parameters into the guard's buffer (made on first use).
    pub(super) fn record_backup(&mut self, batch: &mut Batch) -> Result<()> {
        if self.backup.is_none() {
            self.backup = Some(GpuBuffer::zeroed(
                self.gpu,
                "wide.params_backup",
                self.params.len(),
            )?);
        }
        let backup = self.backup.as_ref().expect("made above");
        if self.options.variant.kernel_copies {
            if self.backup_copy.is_none() {
                self.backup_copy = Some(crate::gpu::WordCopy::new(
                    self.gpu,
                    &self.params,
                    backup,
                    self.params.len(),
                )?);
            }
            return self.backup_copy.as_ref().expect("made above").record(batch);
        }
        batch.copy(
            self.params.raw(),
            backup.raw(),
            self.params.len() as u64 * 4,
        );
        Ok(())
    }

    /// The loss the guard compares this epoch's with: the last epoch's validation loss
    /// (training loss without validation data); before the first epoch, the model's
    /// validation loss as it starts (none without validation data).
    pub(super) fn guard_reference(&mut self) -> Result<Option<f64>> {
        if self.guard_ref.is_none() && self.epoch == 0 {
            self.guard_ref = self.evaluate()?.map(|e| e.loss);
        }
        Ok(self.guard_ref)
    }

    /// Remembers an accepted epoch's loss as the next epoch's reference.
    pub(super) fn guard_accept(&mut self, train_loss: f64, eval: Option<&Eval>) {
        self.guard_ref = Some(eval.map_or(train_loss, |e| e.loss));
    }

    /// Puts the parameters back as the epoch began and switches the flow kernel to atomic
    /// reads (and atomic writes) for the rest of training.
    pub(super) fn restore_atomic(&mut self) -> Result<()> {
        let backup = self
            .backup
            .as_ref()
            .expect("the guard copies the parameters each epoch");
        let mut batch = Batch::new(self.gpu);
        batch.copy(
            backup.raw(),
            self.params.raw(),
            self.params.len() as u64 * 4,
        );
        batch.submit()?;
        let options = Options {
            variant: FlowVariant {
                plain_reads: false,
                coherent_reads: false,
                // Plain writes go through the plain-reads binding, which atomic reads drop.
                plain_writes: false,
                cold_from: 0,
                ..self.options.variant
            },
            ..self.options.clone()
        };
        self.kernels = Kernels::new(
            self.gpu,
            &self.spec,
            self.chunk,
            options.lanes,
            (self.hot, self.seg_rule),
            self.kernels.one_hot,
            &options,
        )?;
        self.options = options;
        for part in &mut self.parts {
            part.steps = [vec![], vec![]];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divergence_rule() {
        let ln2 = std::f64::consts::LN_2;
        assert!(!diverged(0.6, Some(0.6), Some(ln2), 0.02));
        assert!(!diverged(0.6, Some(0.7), Some(ln2), 0.02));
        assert!(diverged(0.6, Some(0.71), Some(ln2), 0.02));
        assert!(diverged(f64::NAN, Some(0.5), Some(ln2), 0.02));
        assert!(diverged(0.5, Some(f64::INFINITY), None, 0.02));
        assert!(!diverged(5.0, None, None, 0.02));
        assert!(diverged(5.0, None, Some(1.0), 0.02));
        assert!(!diverged(1.01, None, Some(1.0), 0.02));
        assert!(aliasing_allowed("Vulkan") && !aliasing_allowed("BrowserWebGpu"));
        assert!(!aliasing_allowed("Gl"));
    }
}
