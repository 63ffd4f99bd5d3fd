//! The public plan: one prepared inference on the path the options chose, with the same
//! rhythm for every path (new → record / run many times → read back).

use std::ops::Range;

use crate::gpu::{Batch, Gpu, GpuTime};
use crate::sparse::Csr;
use crate::spdnn::kernels::RowsPlan;
use crate::spdnn::sliced::{SlicedPlan, Tiling};
use crate::spdnn::{Approach, Network, Options};
use crate::{Error, Result};

enum Inner {
    Rows(RowsPlan),
    Sliced(SlicedPlan),
}

/// A prepared GPU inference of fixed inputs through a fixed network.
pub struct Plan {
    inner: Inner,
    approach: Approach,
    layers: usize,
}

impl Plan {
    /// Uploads the network and the inputs `y0` (`rows × n`) and prepares every dispatch.
    /// Fails on a network with no layer, inputs of another width, bad options, or sizes
    /// beyond the device's bindings (named in the error).
    pub fn new(gpu: &Gpu, net: &Network, y0: &Csr, options: &Options) -> Result<Self> {
        if net.layers.is_empty() {
            return Err(Error::Option("a network needs at least one layer".into()));
        }
        if y0.ncols != net.n {
            return Err(Error::Shape(format!(
                "inputs have {} columns, the network has {} neurons",
                y0.ncols, net.n
            )));
        }
        y0.validate()?;
        let wg = options.workgroup_on(gpu);
        if wg == 0 || wg > gpu.caps.max_invocations_per_workgroup {
            return Err(Error::Option(format!(
                "workgroup of {wg} invocations (the device allows 1..={})",
                gpu.caps.max_invocations_per_workgroup
            )));
        }
        let approach = options.approach.resolve();
        let inner = match approach {
            Approach::DenseRows => Inner::Rows(RowsPlan::new(gpu, net, y0, options)?),
            _ => Inner::Sliced(SlicedPlan::new(gpu, net, y0, options)?),
        };
        Ok(Plan {
            inner,
            approach,
            layers: net.layers.len(),
        })
    }

    /// The concrete path this plan runs.
    pub fn approach(&self) -> Approach {
        self.approach
    }

    /// Number of layers.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Number of chunks the input rows were split into.
    pub fn chunks(&self) -> usize {
        match &self.inner {
            Inner::Rows(p) => p.chunks(),
            Inner::Sliced(p) => p.chunks(),
        }
    }

    /// Dense rows: whether `spdnn.layer` stages its rows in workgroup memory (sliced ELL
    /// always stages slices: `true`).
    pub fn staged(&self) -> bool {
        match &self.inner {
            Inner::Rows(p) => p.staged(),
            Inner::Sliced(_) => true,
        }
    }

    /// Sliced ELL: the tiling chosen (`None` on the dense-rows path).
    pub fn tiling(&self) -> Option<Tiling> {
        match &self.inner {
            Inner::Rows(_) => None,
            Inner::Sliced(p) => Some(p.tiling()),
        }
    }

    /// Sliced ELL: slots per nonzero of W (padding included; 1 = none). `None` on the
    /// dense-rows path.
    pub fn ell_fill(&self) -> Option<f64> {
        match &self.inner {
            Inner::Rows(_) => None,
            Inner::Sliced(p) => Some(p.fill()),
        }
    }

    /// Sliced ELL: whether the weights were dropped for each layer's one value (positions
    /// packed two per word).
    pub fn packed(&self) -> bool {
        match &self.inner {
            Inner::Rows(_) => false,
            Inner::Sliced(p) => p.packed(),
        }
    }

    /// Sliced ELL: whether constant rows take the fast path (`false` on the dense-rows path).
    pub fn constant_rows(&self) -> bool {
        match &self.inner {
            Inner::Rows(_) => false,
            Inner::Sliced(p) => p.constant_rows(),
        }
    }

    /// Sliced ELL: whether a slice's output segments run together (`false` on the dense-rows
    /// path, and where a software device's loop budget refuses them together).
    pub fn segments_together(&self) -> bool {
        match &self.inner {
            Inner::Rows(_) => false,
            Inner::Sliced(p) => p.segments_together(),
        }
    }

    /// Sliced ELL: whether constant rows are carried as scalars through some layer (scalar
    /// rows on and some layer's column sums all one value; `false` on the dense-rows path).
    pub fn scalar_rows(&self) -> bool {
        match &self.inner {
            Inner::Rows(_) => false,
            Inner::Sliced(p) => p.scalar_rows(),
        }
    }

    /// Sliced ELL: per layer, whether scalar rows cross it (its column sums all one value,
    /// scalar rows on); empty on the dense-rows path.
    pub fn scalar_layers(&self) -> Vec<bool> {
        match &self.inner {
            Inner::Rows(_) => Vec::new(),
            Inner::Sliced(p) => p.scalar_layers().to_vec(),
        }
    }

    /// Sliced ELL with constant rows on: per layer, the rows of the last run (over every
    /// chunk) carried through it as scalars. `None` otherwise. One readback.
    pub fn carried_rows(&self, gpu: &Gpu) -> Result<Option<Vec<u64>>> {
        match &self.inner {
            Inner::Rows(_) => Ok(None),
            Inner::Sliced(p) => p.carried_rows(gpu),
        }
    }

    /// Dispatches one run records (every chunk through every layer; nothing submitted).
    pub fn dispatches(&self, gpu: &Gpu) -> Result<usize> {
        let mut batch = Batch::new(gpu);
        self.record(&mut batch)?;
        Ok(batch.dispatches())
    }

    /// Sliced ELL with constant rows on: per layer, `[fast, run, unwritten]`: the tiles of
    /// the last run (over every chunk) that took the constant-row fast path, the tiles that
    /// ran, and the fast tiles that wrote no output (each row's output one value, kept in
    /// its constancy words). `None` otherwise. One readback.
    pub fn fast_tiles(&self, gpu: &Gpu) -> Result<Option<Vec<[u64; 3]>>> {
        match &self.inner {
            Inner::Rows(_) => Ok(None),
            Inner::Sliced(p) => p.fast_tiles(gpu),
        }
    }

    /// Bytes of device memory holding activations (inputs and both layer buffers).
    pub fn peak_feature_bytes(&self) -> u64 {
        match &self.inner {
            Inner::Rows(p) => p.peak_bytes(),
            Inner::Sliced(p) => p.peak_bytes(),
        }
    }

    /// Fills the activation buffers with NaN, so an element no kernel wrote shows.
    pub fn poison(&self, gpu: &Gpu) -> Result<()> {
        match &self.inner {
            Inner::Rows(p) => p.poison(gpu),
            Inner::Sliced(p) => p.poison(gpu),
        }
    }

    /// Records layers `layers` (within 0..L) of every chunk into `batch`; a run records
    /// 0..L in order, in one batch or several (layer 0 restarts the inference).
    pub fn record_layers(&self, batch: &mut Batch, layers: Range<usize>) -> Result<()> {
        if layers.end > self.layers || layers.start > layers.end {
            return Err(Error::Option(format!(
                "layers {layers:?} of a network of {}",
                self.layers
            )));
        }
        match &self.inner {
            Inner::Rows(p) => p.record_layers(batch, layers),
            Inner::Sliced(p) => p.record_layers(batch, layers),
        }
    }

    /// Records the whole inference (every chunk through every layer) into `batch`.
    pub fn record(&self, batch: &mut Batch) -> Result<()> {
        self.record_layers(batch, 0..self.layers)
    }

    /// Records, submits and times one inference.
    pub fn run(&self, gpu: &Gpu) -> Result<GpuTime> {
        let mut batch = Batch::new(gpu);
        self.record(&mut batch)?;
        batch.submit_timed()
    }

    /// Runs the inference in groups of `per` layers, one submission each, calling
    /// `progress(layers done)` after each; the time is the sum of the groups' times.
    pub fn run_grouped(
        &self,
        gpu: &Gpu,
        per: usize,
        mut progress: impl FnMut(usize),
    ) -> Result<GpuTime> {
        let mut total = GpuTime::wall(0.0);
        let mut stamps = true;
        self.run_groups(gpu, per, |end, t| {
            total.seconds += t.seconds;
            stamps &= t.from_timestamps;
            progress(end);
        })?;
        total.from_timestamps = stamps;
        Ok(total)
    }

    /// Runs the inference one layer per submission and returns each layer's time (every
    /// chunk's dispatches of that layer, between timestamps where the device has them).
    /// The state after it is that of any other run.
    pub fn run_per_layer(&self, gpu: &Gpu) -> Result<Vec<GpuTime>> {
        let mut times = Vec::with_capacity(self.layers);
        self.run_groups(gpu, 1, |_, t| times.push(t))?;
        Ok(times)
    }

    /// Submits the layers in groups of `per` (at least 1), in order, calling
    /// `done(layers done, the group's time)` after each.
    fn run_groups(
        &self,
        gpu: &Gpu,
        per: usize,
        mut done: impl FnMut(usize, GpuTime),
    ) -> Result<()> {
        let per = per.max(1);
        let mut start = 0;
        while start < self.layers {
            let end = (start + per).min(self.layers);
            let mut batch = Batch::new(gpu);
            self.record_layers(&mut batch, start..end)?;
            done(end, batch.submit_timed()?);
            start = end;
        }
        Ok(())
    }

    /// The categories of the last run: rows with a nonzero sum after the last layer, 0-based,
    /// increasing. Reads one count and the surviving row ids of each chunk.
    pub fn categories(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        match &self.inner {
            Inner::Rows(p) => p.categories(gpu),
            Inner::Sliced(p) => p.categories(gpu),
        }
    }

    /// The final activations of the last run, `rows × n` row-major (rows that died are 0).
    pub fn output(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        match &self.inner {
            Inner::Rows(p) => p.output(gpu),
            Inner::Sliced(p) => p.output(gpu),
        }
    }
}
