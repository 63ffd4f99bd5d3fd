//! What a training run is asked for: scheme, precision, rank, learning-rate schedule and
//! the batch-Hogwild! kernel's layout, each checked before anything is allocated.

use serde::Serialize;

use crate::{Error, Result};

/// How workers share the ratings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Scheme {
    /// Batch-Hogwild!: random batches of consecutive shuffled samples, races by design.
    Hogwild,
    /// Wavefront: row blocks per worker, column blocks behind a lock array.
    Wavefront,
}

/// Storage precision of P and Q.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Precision {
    /// Half precision (native f16 with SHADER_F16, else two values packed per u32 word).
    F16,
    /// Single precision.
    F32,
}

/// Training options (defaults: Netflix's hyper-parameters of the paper).
#[derive(Clone, Debug)]
pub struct Options {
    /// Features per row, a multiple of 32 up to 256.
    pub k: usize,
    /// Regularization λ (of P and Q alike), in rating units.
    pub lambda: f32,
    /// Initial learning rate α.
    pub alpha: f32,
    /// Learning-rate decay β.
    pub beta: f32,
    /// The scheme.
    pub scheme: Scheme,
    /// Storage precision.
    pub precision: Precision,
    /// Concurrent workers (virtual subgroups); `None`: min(m, n) / 2 capped at 8192
    /// (wavefront: at 1024).
    pub workers: Option<u32>,
    /// Batch-Hogwild!: consecutive samples per batch (f).
    pub batch: u32,
    /// Wavefront: column blocks; `None`: twice the workers (capped by the items).
    pub columns: Option<u32>,
    /// Seed of the permutations, the shuffle, the initial features and the worker streams.
    pub seed: u64,
    /// Permute user and item ids.
    pub permute_ids: bool,
    /// Shuffle the training samples once.
    pub shuffle: bool,
    /// Use subgroup shuffles when the adapter has them (else workgroup memory).
    pub subgroups: bool,
    /// Use native f16 storage when the adapter has SHADER_F16 (else packed u32 words).
    pub native_f16: bool,
    /// Instrumented run: count updates (hogwild) or check the column locks (wavefront).
    pub instrument: bool,
    /// Bind P and Q with the `@coherent` decoration when the adapter offers it (off only to
    /// measure what a non-coherent cache does to the Hogwild! races).
    pub coherent: bool,
    /// Batch-Hogwild! with `coherent`: bind P `@coherent` too (the default); false binds Q
    /// alone, letting P's loads hit a compute unit's cache (a measurement: a row of P
    /// another SM updated may then be read stale). The wavefront ignores it.
    pub coherent_p: bool,
    /// Wavefront: virtual subgroups per worker (its workgroup), which deal each block it holds
    /// round-robin and update it Hogwild!-style among themselves; 1 (the paper's scheme): the
    /// worker updates a block's samples serially.
    pub streams: u32,
    /// Batch-Hogwild!: samples of a batch a worker updates together (1, 2 or 4; default 2):
    /// when none of them shares a row of P or Q, all their row loads are in flight at once
    /// (the result is that of updating them one after another either way). The wavefront
    /// updates one sample at a time and ignores it.
    pub ilp: u32,
    /// Batch-Hogwild! (default on): a worker's lanes load its samples a chunk (one per lane)
    /// ahead of use and pass each to the update by a subgroup shuffle, taking the sample load
    /// off the update's chain. Needs the subgroup reduction and lanes ≥ `ilp`; otherwise off
    /// (the wavefront ignores it).
    pub stage: bool,
    /// Batch-Hogwild!: lanes per update, a power of two up to 32 leaving each lane 1 to 32
    /// words (k/2 / lanes); lanes up to the adapter's subgroup size reduce by shuffles, wider
    /// ones through workgroup memory. `None`: the adapter's subgroup size (at most 32 and k/2).
    /// Fewer lanes put several workers in one hardware subgroup, each lane holding more
    /// words. The wavefront ignores it.
    pub lanes: Option<u32>,
    /// Batch-Hogwild!: adjacent words (feature pairs) of a row a lane loads and stores as one
    /// access: 1, 2 or 4 (lowered to the most that divides a lane's words). The wavefront
    /// ignores it.
    pub vector: u32,
    /// Batch-Hogwild!: most updates a worker performs in one dispatch (an epoch takes as
    /// many dispatches as it needs, in one submission; the result is the same). `None`:
    /// 1,024, which Mesa's llvmpipe needs (its loop limiter silently cuts longer dispatches
    /// short; more is refused on CPU devices). On a GPU, more spares each epoch the launches
    /// and drains of its extra dispatches.
    pub dispatch_updates: Option<u32>,
    /// Batch-Hogwild!: invocations per workgroup, a power of two from the lanes of one update
    /// to the adapter's limit; `None`: 256. Smaller workgroups let an SM hold a number of
    /// workers closer to what its registers allow.
    pub workgroup: Option<u32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            k: 128,
            lambda: 0.05,
            alpha: 0.08,
            beta: 0.3,
            scheme: Scheme::Hogwild,
            precision: Precision::F16,
            workers: None,
            batch: 128,
            columns: None,
            seed: 1,
            permute_ids: true,
            shuffle: true,
            subgroups: true,
            native_f16: true,
            instrument: false,
            coherent: true,
            coherent_p: true,
            streams: 1,
            ilp: 2,
            stage: true,
            lanes: None,
            vector: 1,
            dispatch_updates: None,
            workgroup: None,
        }
    }
}

impl Options {
    /// Checks k, λ, α, β and the batch size.
    pub(crate) fn validate(&self) -> Result<()> {
        let k = self.k;
        if k == 0 || !k.is_multiple_of(32) || k > 256 {
            return Err(Error::Option(format!(
                "k = {k}: must be a multiple of 32 from 32 to 256"
            )));
        }
        for (name, v) in [
            ("lambda", self.lambda),
            ("alpha", self.alpha),
            ("beta", self.beta),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(Error::Option(format!(
                    "{name} = {v}: must be finite and ≥ 0"
                )));
            }
        }
        if self.dispatch_updates == Some(0) {
            return Err(Error::Option("dispatch_updates = 0: must be ≥ 1".into()));
        }
        let max_batch = self
            .dispatch_updates
            .unwrap_or(super::kernels::UPDATES_PER_DISPATCH);
        if self.batch == 0 || self.batch > max_batch {
            return Err(Error::Option(format!(
                "batch = {}: must be from 1 to {max_batch} (the updates per dispatch)",
                self.batch
            )));
        }
        if ![1, 2, 4].contains(&self.ilp) {
            return Err(Error::Option(format!(
                "ilp = {}: must be 1, 2 or 4",
                self.ilp
            )));
        }
        if ![1, 2, 4].contains(&self.vector) {
            return Err(Error::Option(format!(
                "vector = {}: must be 1, 2 or 4",
                self.vector
            )));
        }
        Ok(())
    }

    /// Learning rate of epoch `t` (0-based): α / (1 + β·t^1.5).
    pub fn learning_rate(&self, t: usize) -> f32 {
        (self.alpha as f64 / (1.0 + self.beta as f64 * (t as f64).powf(1.5))) as f32
    }
}
