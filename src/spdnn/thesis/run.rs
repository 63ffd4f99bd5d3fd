//! The host loop of the thesis's approaches (its Algorithm 9): per layer, per batch of the
//! left operand's list rows: the fused multiply into the dense buffer, the count and scans of
//! its nonzeros, one read of the batch's totals, the exact-size expand of Y_out when needed,
//! and the flush (recorded with the next batch's multiply, so one round trip per batch).

use std::time::Instant;

use serde::Serialize;

use crate::gpu::{Batch, Gpu};
use crate::sparse::bucket::par_map;
use crate::sparse::Csr;
use crate::spdnn::thesis::operands::{Right, Sparse};
use crate::spdnn::thesis::stage::{RightRef, Stage};
use crate::spdnn::thesis::{BufferSize, Format, ThesisOptions, Tiling};
use crate::spdnn::{loops, Network};
use crate::{Error, Result};

/// What one run of a thesis approach produced.
#[derive(Clone, Debug, Serialize)]
pub struct ThesisRun {
    /// Wall seconds of the whole inference (every layer, batch and read-back).
    pub seconds: f64,
    /// Batches over all layers and bands (one round trip each).
    pub batches: usize,
    /// Bands of input rows (each inferred through every layer in turn).
    pub bands: usize,
    /// Most bytes of feature memory at once: Y_in + Y_out (as sized at that moment) + the
    /// batch buffer and its per-row counters + the other bands' inputs.
    pub peak_feature_bytes: u64,
    /// Most nonzeros Y held after a layer.
    pub max_nnz: usize,
    /// Times Y_out was grown (a new exact-size pair of arrays, the old entries copied).
    pub expansions: usize,
    /// GPU seconds of the multiply kernels alone (the thesis's "spmm"), when
    /// [`ThesisPlan::set_time_multiply`] asked for them (each multiply then goes in its own
    /// timed submission, which lengthens the run).
    pub multiply_seconds: Option<f64>,
    /// Whether `multiply_seconds` came from timestamp queries (else wall clock).
    pub multiply_from_timestamps: bool,
}

/// What one layer took.
#[derive(Default)]
struct LayerStats {
    batches: usize,
    peak: u64,
    expansions: usize,
    multiply: f64,
    stamps: bool,
}

/// A prepared inference by one of the thesis's approaches.
pub struct ThesisPlan {
    opts: ThesisOptions,
    n: usize,
    /// Rows of the largest band.
    rows: usize,
    /// Each band's first row and its Y0; `None` for the band whose Y0 is in `sets[0]`.
    inputs: Vec<(usize, Option<Sparse>)>,
    /// The band whose Y0 is in `sets[0]`.
    band: usize,
    /// Bytes of every band's Y0.
    input_bytes: u64,
    /// Categories of a run over several bands (global row ids, increasing).
    cats: Option<Vec<u32>>,
    /// CSR approaches: W_l by row id. CSC·CSC: empty (W_lᵀ is a left operand).
    rights: Vec<Right>,
    /// CSC·CSC: W_lᵀ (W's columns) as left operands.
    lefts: Vec<Sparse>,
    /// [the current band's Y0, ping, pong]; `None` only while a layer writes it.
    sets: [Option<Sparse>; 3],
    cur: usize,
    stage: Stage,
    peak: u64,
    max_nnz: usize,
    batches: usize,
    expansions: usize,
    multiply_s: f64,
    stamps: bool,
    poison: bool,
    time_multiply: bool,
}

/// Refuses a plan whose kernels could loop past a software device's budget
/// ([`crate::gpu::loop_cap`]), before anything is uploaded: the multiply's invocations walk a
/// left row (a row of Y, up to N entries once the layers fill it; CSC·CSC: a column of W, its
/// in-degree) and for each entry a right row (a row of W, its longest `wmax`; CSC·CSC: a
/// column of Y, up to the band's rows), and the count and flush walk a buffer row of
/// `width`. Y's rows are bounded by N, not by Y0's, since any later layer may fill them.
fn check_loop_budget(
    gpu: &Gpu,
    net: &Network,
    opts: &ThesisOptions,
    (rows, width): (usize, usize),
    lanes: u32,
    wmax: usize,
) -> Result<()> {
    let Some(budget) = crate::gpu::loop_cap::budget(gpu.caps.loop_cap) else {
        return Ok(());
    };
    let n = net.n;
    let (left, right) = match opts.format {
        Format::CscCsc => {
            let in_degree = net.layers.iter().map(loops::max_in_degree).max();
            (in_degree.unwrap_or(0), rows)
        }
        _ => (n, wmax),
    };
    let wg = opts.workgroup;
    let multiply = match opts.tiling {
        Tiling::OneD => loops::thesis_1d(width, wg, lanes, left, right),
        Tiling::TwoD => {
            let tile = (opts.tile_rows.max(1), opts.tile_cols.max(1));
            loops::thesis_2d(wg, lanes, tile, left, right)
        }
    };
    let flush = loops::thesis_flush(width, wg);
    for (kernel, iterations) in [("thesis_multiply", multiply), ("thesis_flush", flush)] {
        if iterations > budget {
            return Err(loops::refuse(
                &gpu.caps,
                &format!(
                    "spdnn.{kernel} ({} {}, N = {n}, rows of up to {left} entries times \
                     rows of up to {right}, {lanes} lanes per entry, buffer rows of {width})",
                    opts.format.name(),
                    opts.tiling.name()
                ),
                iterations,
            ));
        }
    }
    Ok(())
}

impl ThesisPlan {
    /// Uploads W (in the format's storage) and Y0, and prepares the kernels and the batch
    /// buffer. Fails on bad options or sizes beyond the device (named in the error).
    pub fn new(gpu: &Gpu, net: &Network, y0: &Csr, opts: &ThesisOptions) -> Result<Self> {
        let caps = &gpu.caps;
        opts.validate(
            caps.max_invocations_per_workgroup,
            caps.max_workgroup_storage_bytes,
        )?;
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
        let (n, total_rows) = (net.n, y0.nrows);
        let csc = opts.format == Format::CscCsc;
        // Bands: a band's dense Y (rows × n floats) bounds its sparse Y's entries, so by
        // default a band is as large as that bound lets one binding hold, evened out.
        let band = match opts.band_rows {
            Some(b) => b,
            None => {
                let fit = (caps.max_storage_binding_bytes / (4 * n.max(1) as u64)) as usize;
                let fit = fit.max(1);
                total_rows.div_ceil(total_rows.div_ceil(fit).max(1))
            }
        }
        .clamp(1, total_rows.max(1));
        let rows = band;
        // The buffer's rows are Y's rows (CSR) or W's columns over all Y rows (CSC).
        let (width, list_max) = if csc { (rows, n) } else { (n, rows) };
        let wanted = match opts.buffer {
            BufferSize::Fraction(f) => ((f * (rows * n) as f64) / width.max(1) as f64) as usize,
            BufferSize::Rows(r) => r,
        };
        let fit = (caps.max_storage_binding_bytes / (4 * width.max(1) as u64)) as usize;
        if fit == 0 {
            return Err(Error::TooLarge {
                what: "one row of the batch buffer".into(),
                needed: format!("{} bytes", 4 * width),
                limit: format!("{} bytes per binding", caps.max_storage_binding_bytes),
            });
        }
        // No input rows (CSC: every column has zero width): one batch of them all, not one
        // dispatch per column.
        let wanted = if width == 0 { list_max } else { wanted };
        let slots = wanted.clamp(1, list_max.max(1)).min(fit);
        // 1D: a row's sums in workgroup memory when they fit (or as asked).
        let row_bytes = 4 * width as u64 + 16;
        let row_fits = row_bytes <= u64::from(caps.max_workgroup_storage_bytes);
        let wg_row = opts.tiling == Tiling::OneD
            && match opts.row_in_workgroup {
                Some(true) if !row_fits => {
                    return Err(Error::TooLarge {
                        what: format!("a row of {width} sums in workgroup memory"),
                        needed: format!("{row_bytes} bytes"),
                        limit: format!("{} bytes", caps.max_workgroup_storage_bytes),
                    })
                }
                Some(on) => on,
                None => row_fits,
            };
        // W's longest row (the right operand's, CSR and CSR·ELL), counted before anything
        // is uploaded: it sets the lanes per left entry and, with the lanes, the loops.
        let wmax = if csc {
            0
        } else {
            net.layers
                .iter()
                .map(|w| {
                    (0..w.nrows)
                        .map(|r| w.row_range(r).len())
                        .max()
                        .unwrap_or(0)
                })
                .max()
                .unwrap_or(0)
                .max(1)
        };
        let wg = opts.workgroup;
        let pow2 = |x: usize| (x.max(1).next_power_of_two() as u32).min(wg);
        // Lanes per left entry: about the right rows' length (within a tile for 2D).
        let lanes = match (csc, opts.tiling) {
            (true, Tiling::OneD) => wg,
            (true, Tiling::TwoD) => pow2(32),
            (false, Tiling::OneD) => pow2(wmax),
            (false, Tiling::TwoD) => {
                pow2((wmax * (opts.tile_cols as usize).min(n)).div_ceil(n.max(1)))
            }
        };
        check_loop_budget(gpu, net, opts, (rows, width), lanes, wmax)?;
        let (rights, lefts) = if csc {
            let lefts = net
                .layers
                .iter()
                .map(|w| Sparse::upload(gpu, &w.transpose(), n, false))
                .collect::<Result<Vec<_>>>()?;
            (Vec::new(), lefts)
        } else {
            let ell = opts.format == Format::CsrEll;
            // Laid out on every core a group of layers at a time (bounded host memory),
            // uploaded in order.
            let mut rights = Vec::with_capacity(net.layers.len());
            for group in net.layers.chunks(64) {
                let layouts = par_map(group.len(), |i| Right::layout(&group[i], ell));
                for (w, layout) in group.iter().zip(layouts) {
                    rights.push(Right::upload(gpu, layout, w.nrows)?);
                }
            }
            // The lanes and the loop check took W's longest row from the host.
            debug_assert!(rights.iter().all(|r| r.width <= wmax));
            (rights, Vec::new())
        };
        // Each band's Y0 with band-local row ids (the categories add the band's first row).
        let mut inputs = Vec::new();
        for r0 in (0..total_rows.max(1)).step_by(band) {
            let part = y0.row_band(r0..(r0 + band).min(total_rows));
            let set = if csc {
                Sparse::upload(gpu, &part.transpose(), n, true)?
            } else {
                Sparse::upload(gpu, &part, rows, false)?
            };
            inputs.push((r0, Some(set)));
        }
        let input_bytes = inputs
            .iter()
            .filter_map(|(_, s)| s.as_ref().map(Sparse::bytes))
            .sum();
        let y0set = inputs[0].1.take();
        let sets = [
            y0set,
            Some(Sparse::empty(gpu, list_max, n, csc)?),
            Some(Sparse::empty(gpu, list_max, n, csc)?),
        ];
        Ok(ThesisPlan {
            opts: opts.clone(),
            n,
            rows,
            inputs,
            band: 0,
            input_bytes,
            cats: None,
            rights,
            lefts,
            sets,
            cur: 0,
            stage: Stage::new(gpu, opts, (slots, width), lanes, wg_row, net.bias)?,
            peak: 0,
            max_nnz: 0,
            batches: 0,
            expansions: 0,
            multiply_s: 0.0,
            stamps: true,
            poison: false,
            time_multiply: false,
        })
    }

    /// Rows (columns for CSC·CSC) per batch.
    pub fn batch_rows(&self) -> usize {
        self.stage.slots
    }

    /// 1D: whether a row's sums are kept in workgroup memory (else f32 atomics in the
    /// buffer); `false` for 2D.
    pub fn row_in_workgroup(&self) -> bool {
        self.stage.wg_row
    }

    /// Invocations per left entry in the multiply kernel.
    pub fn lanes(&self) -> u32 {
        self.stage.lanes
    }

    /// Bytes of the dense batch buffer.
    pub fn buffer_bytes(&self) -> u64 {
        self.stage.buffer_bytes()
    }

    /// Bytes of the weights on the device.
    pub fn weight_bytes(&self) -> u64 {
        self.rights.iter().map(Right::bytes).sum::<u64>()
            + self.lefts.iter().map(Sparse::bytes).sum::<u64>()
    }

    /// Bands of input rows.
    pub fn bands(&self) -> usize {
        self.inputs.len()
    }

    /// Starts an inference: the next layer reads the first band's Y0 (with
    /// [`ThesisPlan::set_poison`], the buffer is filled with NaN first).
    pub fn start(&mut self, gpu: &Gpu) -> Result<()> {
        self.cats = None;
        self.start_band(gpu, 0)
    }

    /// Puts band `b`'s Y0 in place of the current one and starts from it.
    fn start_band(&mut self, gpu: &Gpu, b: usize) -> Result<()> {
        if b != self.band {
            let now = self.sets[0].take();
            self.inputs[self.band].1 = now;
            self.sets[0] = self.inputs[b].1.take();
            self.band = b;
        }
        self.cur = 0;
        self.peak = 0;
        self.max_nnz = self.set(0).nnz;
        self.batches = 0;
        self.expansions = 0;
        self.multiply_s = 0.0;
        self.stamps = true;
        if self.poison {
            self.stage.poison(gpu)?;
        }
        Ok(())
    }

    fn set(&self, i: usize) -> &Sparse {
        self.sets[i]
            .as_ref()
            .expect("a set is only taken during a layer")
    }

    /// Runs every layer from Y0, band after band; returns the wall time, batches and peak
    /// memory.
    pub fn run(&mut self, gpu: &Gpu) -> Result<ThesisRun> {
        let layers = self.rights.len().max(self.lefts.len());
        let bands = self.bands();
        let t0 = Instant::now();
        let (mut batches, mut peak, mut max_nnz, mut expansions) = (0, 0, 0, 0);
        let (mut multiply_s, mut stamps) = (0.0, true);
        let mut cats = Vec::new();
        for b in 0..bands {
            self.cats = None;
            self.start_band(gpu, b)?;
            for l in 0..layers {
                self.layer(gpu, l)?;
            }
            batches += self.batches;
            expansions += self.expansions;
            peak = peak.max(self.peak);
            max_nnz = max_nnz.max(self.max_nnz);
            multiply_s += self.multiply_s;
            stamps &= self.stamps;
            if bands > 1 {
                // Within the timed run: the band's Y is overwritten by the next band's.
                let r0 = self.inputs[b].0 as u32;
                cats.extend(self.categories(gpu)?.into_iter().map(|r| r + r0));
            }
        }
        gpu.wait()?;
        if bands > 1 {
            // The other bands' inputs stay resident while one band runs.
            let own = self.set(0).bytes();
            peak += self.input_bytes - own.min(self.input_bytes);
            self.cats = Some(cats);
        }
        Ok(ThesisRun {
            seconds: t0.elapsed().as_secs_f64(),
            batches,
            bands,
            peak_feature_bytes: peak,
            max_nnz,
            expansions,
            multiply_seconds: self.time_multiply.then_some(multiply_s),
            multiply_from_timestamps: self.time_multiply && stamps,
        })
    }

    /// Runs layer `l` (after [`ThesisPlan::start`] and layers 0..l) on the current Y.
    pub fn layer(&mut self, gpu: &Gpu, l: usize) -> Result<()> {
        let layers = self.rights.len().max(self.lefts.len());
        if l >= layers {
            return Err(Error::Option(format!("layer {l} of a network of {layers}")));
        }
        let csc = self.opts.format == Format::CscCsc;
        let out_i = 1 + l % 2;
        let in_i = self.cur;
        let mut out = self.sets[out_i].take().expect("output set present");
        let result = self.layer_into(gpu, l, in_i, &mut out, csc);
        self.sets[out_i] = Some(out);
        let stats = result?;
        self.batches += stats.batches;
        self.expansions += stats.expansions;
        self.peak = self.peak.max(stats.peak);
        self.multiply_s += stats.multiply;
        self.stamps &= stats.stamps;
        self.cur = out_i;
        self.max_nnz = self.max_nnz.max(self.set(out_i).nnz);
        Ok(())
    }

    /// One layer into `out`; returns the batches it took, its peak feature bytes, the times
    /// it grew `out` and (when timed) the multiply's GPU time.
    fn layer_into(
        &self,
        gpu: &Gpu,
        l: usize,
        in_i: usize,
        out: &mut Sparse,
        csc: bool,
    ) -> Result<LayerStats> {
        let mut st = LayerStats {
            stamps: true,
            ..Default::default()
        };
        let input = self.sets[in_i].as_ref().expect("input set present");
        if csc {
            out.beg.fill(gpu, 0)?;
            out.end.fill(gpu, 0)?;
        }
        if self.poison {
            out.val.fill(gpu, f32::NAN)?;
        }
        // Left operand (its list rows are dealt in batches) and right operand (read by id).
        let (left, right) = if csc {
            (&self.lefts[l], RightRef::of_sparse(input))
        } else {
            (input, RightRef::of(&self.rights[l]))
        };
        let list = left.rows;
        let (mut rows_base, mut nnz_base) = (0usize, 0usize);
        // The last batch counted and not yet flushed: (first list row, rows, non-empty
        // rows, nonzeros). Its flush is recorded with the next batch's multiply.
        let mut pending: Option<(usize, usize, usize, usize)> = None;
        let mut b0 = 0usize;
        loop {
            let mut batch = Batch::new(gpu);
            if let Some((pb0, prows, nonempty, nnz)) = pending.take() {
                if Stage::expand(
                    gpu,
                    &mut batch,
                    out,
                    nnz_base,
                    nnz_base + nnz,
                    l,
                    self.poison,
                )? {
                    st.expansions += 1;
                }
                self.stage.record_flush(
                    gpu,
                    &mut batch,
                    &left.ids,
                    out,
                    (pb0, prows),
                    (rows_base, nnz_base),
                    csc,
                )?;
                rows_base += nonempty;
                nnz_base += nnz;
            }
            let next = if b0 < list {
                let rows = self.stage.slots.min(list - b0);
                if self.time_multiply {
                    // The previous flush first, then the multiply alone, timed.
                    if batch.dispatches() > 0 {
                        batch.submit()?;
                    }
                    let mut alone = Batch::new(gpu);
                    self.stage
                        .record_multiply(gpu, &mut alone, left, &right, b0, rows)?;
                    let t = alone.submit_timed()?;
                    st.multiply += t.seconds;
                    st.stamps &= t.from_timestamps;
                    batch = Batch::new(gpu);
                } else {
                    self.stage
                        .record_multiply(gpu, &mut batch, left, &right, b0, rows)?;
                }
                self.stage.record_count(gpu, &mut batch, rows)?;
                Some(rows)
            } else {
                None
            };
            if batch.dispatches() > 0 {
                batch.submit()?;
            }
            let Some(rows) = next else { break };
            st.batches += 1;
            let tot = self.stage.tot.read(gpu)?;
            let (nnz, nonempty) = (tot[0] as usize, tot[1] as usize);
            if nonempty > rows || nnz > rows * self.stage.width {
                return Err(Error::Check {
                    kernel: "spdnn.thesis_count".into(),
                    message: format!(
                        "a batch of {rows} rows reports {nonempty} non-empty rows and {nnz} \
                         nonzeros"
                    ),
                });
            }
            let out_bytes = out.bytes() + 8 * (nnz_base + nnz).saturating_sub(out.col.len()) as u64;
            let now = input.bytes() + out_bytes + self.stage.bytes();
            st.peak = st.peak.max(now);
            pending = Some((b0, rows, nonempty, nnz));
            b0 += rows;
        }
        out.rows = rows_base;
        out.nnz = nnz_base;
        Ok(st)
    }

    /// Time the multiply kernels alone ([`ThesisRun::multiply_seconds`]).
    pub fn set_time_multiply(&mut self, on: bool) {
        self.time_multiply = on;
    }

    /// Poison Y's values with NaN at every layer and expand (tests), so an entry no kernel
    /// wrote shows.
    pub fn set_poison(&mut self, on: bool) {
        self.poison = on;
    }

    /// Y of the current band after the last layer run, dense `rows × n` row-major (band
    /// rows; the whole Y with one band).
    pub fn output(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        let csc = self.opts.format == Format::CscCsc;
        self.set(self.cur).dense(gpu, self.rows, self.n, csc)
    }

    /// Rows with a nonzero sum after the last layer run, 0-based, increasing (every stored
    /// value is positive, so a row is a category iff it holds an entry); after
    /// [`ThesisPlan::run`] over several bands, those of every band (else of the current
    /// band, band-local).
    pub fn categories(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        if let Some(c) = &self.cats {
            return Ok(c.clone());
        }
        let y = self.set(self.cur);
        let mut out = if self.opts.format == Format::CscCsc {
            let mut rows = y.col.read(gpu)?;
            rows.truncate(y.nnz);
            rows
        } else {
            let mut ids = y.ids.read(gpu)?;
            ids.truncate(y.rows);
            ids
        };
        out.sort_unstable();
        out.dedup();
        if out.last().is_some_and(|&r| r as usize >= self.rows) {
            return Err(Error::Check {
                kernel: "spdnn.thesis_flush".into(),
                message: format!("a row id beyond the {} rows", self.rows),
            });
        }
        Ok(out)
    }

    /// Rows (columns for CSC·CSC) in Y's list after the last layer run, and its nonzeros.
    pub fn active(&self) -> (usize, usize) {
        let y = self.set(self.cur);
        (y.rows, y.nnz)
    }
}
