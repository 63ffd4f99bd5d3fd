//! Recording an epoch: the schedule written in shuffled order, each part's dispatches (sync:
//! flow or the stage baseline, then apply, per mini-batch, or the persistent sync kernel
//! per span of mini-batches; async: persistent workgroups per span) made once and submitted
//! together, the training loss read back.

use super::{Part, Step, Trainer};
use crate::gpu::{Batch, GpuBuffer};
use crate::Result;

/// The training output's poison: a quiet NaN with a payload no arithmetic produces, so an
/// entry still holding it after the epoch belongs to a chunk that never ran (a computed NaN
/// loss carries the canonical payload, and is reported as divergence instead).
const UNTRAINED: u32 = 0x7fc5_5a5a;

impl Trainer<'_> {
    /// One epoch over the training data in one submission (parts in shuffled order, each
    /// part's chunks in shuffled order); returns (mean training loss, device time).
    pub fn train_epoch(&mut self) -> Result<(f64, crate::gpu::GpuTime)> {
        let gpu = self.gpu;
        let sync = self.options.sync;
        let part_order = self.order(self.parts.len());
        let mut last = vec![];
        for &p in &part_order {
            let p = p as usize;
            let ids = self.order(self.parts[p].data.host.n_chunks);
            let part = &self.parts[p];
            let (n, chunk) = (part.data.host.n_samples, self.chunk);
            let samples = move |c: u32| chunk.min(n - c as usize * chunk);
            part.sched
                .write(gpu, &ids, if sync { Some(&samples) } else { None })?;
            part.data.out.fill(gpu, f32::from_bits(UNTRAINED))?;
            last.push((p, ids));
        }
        if let Some(word) = &self.grid_word {
            word.fill(gpu, 0)?;
        }
        let guard = self.guard_on();
        let time = if self.ring.is_some() {
            if guard {
                let mut batch = Batch::new(gpu);
                self.record_backup(&mut batch)?;
                batch.submit()?;
            }
            self.ring_epoch(&part_order)?
        } else {
            for p in 0..self.parts.len() {
                if self.parts[p].steps[0].is_empty() {
                    let d = &self.parts[p].data;
                    self.parts[p].steps[0] =
                        self.epoch_steps(&self.parts[p], [&d.meta, &d.sedge, &d.fedge])?;
                }
            }
            let mut batch = Batch::new(gpu);
            // Snapshot reads' copies and the guard's are part of the epoch's device time.
            batch.time_copies();
            if guard {
                self.record_backup(&mut batch)?;
            }
            for &p in &part_order {
                self.record(&mut batch, &self.parts[p as usize].steps[0])?;
            }
            batch.submit_timed()?
        };
        self.last_order = last;
        self.check_persistent_completed()?;
        let mut total = 0.0;
        let mut n = 0;
        for (p, part) in self.parts.iter().enumerate() {
            let losses = part.data.out.read(gpu)?;
            let missed = losses.iter().filter(|l| l.to_bits() == UNTRAINED).count();
            if missed > 0 {
                return Err(crate::Error::Gpu {
                    kernel: "wide.flow".into(),
                    message: format!(
                        "{missed} of part {p}'s {} chunks were not trained this epoch: the \
                         device ended the dispatch early (llvmpipe caps a shader \
                         invocation's loop iterations at 65,535; more workgroups, \
                         --async-groups, give each fewer chunks)",
                        losses.len()
                    ),
                });
            }
            total += losses.iter().map(|&l| l as f64).sum::<f64>();
            n += part.data.host.n_samples;
        }
        Ok((total / n.max(1) as f64, time))
    }

    /// With the persistent sync kernel: fails with [`crate::Error::Gpu`] unless its count
    /// of completed mini-batches is the epoch's (a device may end long loops early:
    /// llvmpipe stops a shader invocation's loops after 65,535 iterations in all).
    fn check_persistent_completed(&self) -> Result<()> {
        let Some(word) = &self.grid_word else {
            return Ok(());
        };
        let want: usize = self
            .parts
            .iter()
            .flat_map(|p| {
                p.sched
                    .counts
                    .iter()
                    .map(|c| c.div_ceil(p.sched.batch_chunks))
            })
            .sum();
        let done = word.read(self.gpu)?[1] as usize;
        if done != want {
            return Err(crate::Error::Gpu {
                kernel: "wide.flow (persistent sync)".into(),
                message: format!(
                    "completed {done} of the epoch's {want} mini-batches: the device ended the \
                     kernel's loops early (llvmpipe caps a shader invocation's loop iterations \
                     at 65,535); use a shorter sync_span (--sync-span) or the dispatch sync \
                     kernel (--sync-kernel dispatch)"
                ),
            });
        }
        Ok(())
    }

    /// Records `steps` into `batch`, each snapshot-reading dispatch after the copy of the
    /// live parameters into the snapshot (so its reads lag by at most its own chunks).
    pub(super) fn record(&self, batch: &mut Batch, steps: &[Step]) -> Result<()> {
        for (kernel, bg, grid, snapshot_first) in steps {
            if *snapshot_first {
                let snap = self
                    .snapshot
                    .as_ref()
                    .expect("snapshot reads keep a snapshot");
                match &self.snapshot_copy {
                    Some(copy) if self.options.variant.kernel_copies => copy.record(batch)?,
                    _ => batch.copy(self.params.raw(), snap.raw(), self.params.len() as u64 * 4),
                }
            }
            batch.dispatch(kernel, bg.clone(), *grid)?;
        }
        Ok(())
    }

    /// The dispatches of an epoch bound to `arrays` (meta, sample-sorted, feature-sorted
    /// edges), made once: the schedule's entries keep their offsets and only their contents
    /// change from epoch to epoch.
    pub(super) fn epoch_steps(
        &self,
        part: &Part,
        arrays: [&GpuBuffer<u32>; 3],
    ) -> Result<Vec<Step>> {
        let [meta, sedge, fedge] = arrays;
        let gpu = self.gpu;
        let k = &self.kernels;
        let sync = self.options.sync;
        let mut steps = vec![];
        for (b, &count) in part.sched.counts.iter().enumerate() {
            if let Some(word) = &self.grid_word {
                // The persistent sync kernel: the entry's mini-batches in one dispatch of G
                // workgroups, gradient and update alike (no apply dispatch).
                let mut entries = vec![
                    part.config.as_entire_buffer_binding(),
                    part.sched.entry(b),
                    meta.raw().as_entire_buffer_binding(),
                    sedge.raw().as_entire_buffer_binding(),
                    fedge.raw().as_entire_buffer_binding(),
                    self.params.raw().as_entire_buffer_binding(),
                    self.grad.raw().as_entire_buffer_binding(),
                    part.data.out.raw().as_entire_buffer_binding(),
                    word.raw().as_entire_buffer_binding(),
                ];
                if self.options.variant.plain_reads {
                    // Coherent reads: the parameters again, for `@coherent` plain loads.
                    entries.push(self.params.raw().as_entire_buffer_binding());
                }
                let bg = k.flow_sync.bind_ranges(gpu, &entries)?;
                let grid = gpu.grid(self.sync_groups as u32)?;
                steps.push((k.flow_sync.clone(), bg, grid, false));
                continue;
            }
            let groups = if sync { count } else { count.min(self.groups) };
            let grid = gpu.grid(groups as u32)?;
            if let (Some(sk), Some(accs)) = (&self.stage, &part.accs) {
                for kernel in [&sk.aggregate, &sk.loss, &sk.grad] {
                    let bg = kernel.bind_ranges(
                        gpu,
                        &[
                            part.config.as_entire_buffer_binding(),
                            part.sched.entry(b),
                            meta.raw().as_entire_buffer_binding(),
                            sedge.raw().as_entire_buffer_binding(),
                            self.params.raw().as_entire_buffer_binding(),
                            accs.raw().as_entire_buffer_binding(),
                            self.grad.raw().as_entire_buffer_binding(),
                            part.data.out.raw().as_entire_buffer_binding(),
                        ],
                    )?;
                    steps.push((kernel.clone(), bg, grid, false));
                }
            } else {
                let flow = if sync { &k.flow_sync } else { &k.flow_async };
                // Async binds the parameters read-write at 5 and the step scales at 6.
                let sixth = match &self.scale {
                    Some(s) if !sync => s,
                    _ => &self.grad,
                };
                let mut entries = vec![
                    part.config.as_entire_buffer_binding(),
                    part.sched.entry(b),
                    meta.raw().as_entire_buffer_binding(),
                    sedge.raw().as_entire_buffer_binding(),
                    fedge.raw().as_entire_buffer_binding(),
                    self.params.raw().as_entire_buffer_binding(),
                    sixth.raw().as_entire_buffer_binding(),
                    part.data.out.raw().as_entire_buffer_binding(),
                ];
                if !sync && self.options.variant.plain_reads {
                    // The same parameters again, read without atomics.
                    entries.push(self.params.raw().as_entire_buffer_binding());
                }
                let snapshot = match &self.snapshot {
                    Some(snap) if !sync => {
                        entries.push(snap.raw().as_entire_buffer_binding());
                        true
                    }
                    _ => false,
                };
                let bg = flow.bind_ranges(gpu, &entries)?;
                steps.push((flow.clone(), bg, grid, snapshot));
            }
            if sync {
                let bg = k.apply.bind_ranges(
                    gpu,
                    &[
                        part.config.as_entire_buffer_binding(),
                        part.sched.entry(b),
                        meta.raw().as_entire_buffer_binding(),
                        self.params.raw().as_entire_buffer_binding(),
                        self.grad.raw().as_entire_buffer_binding(),
                    ],
                )?;
                steps.push((k.apply.clone(), bg, grid, false));
            }
        }
        Ok(steps)
    }
}
