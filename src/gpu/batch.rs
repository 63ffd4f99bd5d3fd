//! Recording many dispatches and submitting them once.

use std::sync::Arc;

use crate::gpu::timer::{GpuTime, Timestamps, MAX_TIMESTAMPS};
use crate::gpu::{Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::{Error, Result};

#[derive(Clone)]
enum Step {
    Dispatch {
        kernel: Arc<Kernel>,
        bind_group: wgpu::BindGroup,
        grid: [u32; 3],
        /// A gated dispatch: its grid is read from (arguments buffer, byte offset), which the
        /// region's `runtime.gate` dispatch fills (patched in at [`Batch::end_gate`]).
        indirect: Option<(wgpu::Buffer, u64)>,
    },
    Copy {
        src: wgpu::Buffer,
        dst: wgpu::Buffer,
        bytes: u64,
    },
    /// The start of a named phase ([`Batch::phase`]): the next dispatch opens a compute pass.
    Phase(&'static str),
}

/// How [`Batch::encode`] takes timestamps.
#[derive(Clone, Copy)]
enum Timing<'t> {
    None,
    /// Two: before the first step and after the last.
    Whole(&'t Timestamps),
    /// A begin/end pair around each compute pass, in order.
    Passes(&'t Timestamps),
}

/// One compute pass of a batch recorded with [`Batch::time_phases`]: the phase it belongs to
/// and its GPU begin and end, in seconds after the first pass began.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PhaseTime {
    /// The name given to [`Batch::phase`] (`"batch"` before the first).
    pub name: &'static str,
    /// Seconds from the first pass's beginning to this pass's.
    pub start: f64,
    /// Seconds from the first pass's beginning to this pass's end.
    pub end: f64,
}

/// The timestamps of a submitted batch's passes ([`Batch::submit_nowait_phased`]).
pub struct PhaseTimes {
    ts: Timestamps,
    names: Vec<&'static str>,
}

impl PhaseTimes {
    /// Each pass's phase and GPU times (waits for the device).
    pub fn read(&self, gpu: &Gpu) -> Result<Vec<PhaseTime>> {
        let s = self.ts.seconds(gpu)?;
        Ok(self
            .names
            .iter()
            .enumerate()
            .map(|(k, &name)| PhaseTime {
                name,
                start: s[2 * k],
                end: s[2 * k + 1],
            })
            .collect())
    }
}

/// A list of dispatches (and buffer copies) recorded by kernel functions and submitted in
/// one command buffer; consecutive dispatches share one compute pass (unless
/// [`Batch::time_phases`] splits them). wgpu orders
/// dispatches in a pass that touch the same buffer, so later steps see earlier results.
pub struct Batch<'g> {
    gpu: &'g Gpu,
    steps: Vec<Step>,
    gate: Option<Gate>,
    /// [`Batch::submit_timed`] brackets copies too (see [`Batch::time_copies`]).
    time_copies: bool,
    /// [`Batch::phase`] records its markers (see [`Batch::time_phases`]).
    phases: bool,
}

/// A place in a batch's recording outside any gated region ([`Batch::mark`]), from which
/// [`Batch::replay`] repeats what was recorded after it.
#[derive(Clone, Copy, Debug)]
pub struct Mark(usize);

/// Steps taken out of a batch ([`Batch::into_recording`]) to be recorded again, whole, into
/// later batches ([`Batch::append`]) with no host work but clones: the dispatches keep their
/// kernels, bind groups (which keep their buffers alive) and gated regions' arguments, and
/// the uniform values written when they were recorded, so what changes between uses must
/// live in buffers the steps read (a solver's iterations, replayed solve after solve).
#[derive(Clone)]
pub struct Recording {
    steps: Vec<Step>,
}

impl Recording {
    /// Number of dispatches.
    pub fn dispatches(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Dispatch { .. }))
            .count()
    }
}

/// An open gated region: where it starts, the flag it tests, and its dispatches' grids.
struct Gate {
    start: usize,
    flag: wgpu::Buffer,
    index: u32,
    /// (step index, grid) of each gated dispatch.
    dispatches: Vec<(usize, [u32; 3])>,
}

const GATE_BINDINGS: [Binding; 4] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
];

impl<'g> Batch<'g> {
    /// An empty batch on `gpu`.
    pub fn new(gpu: &'g Gpu) -> Self {
        Batch {
            gpu,
            steps: vec![],
            gate: None,
            time_copies: false,
            phases: false,
        }
    }

    /// Lets [`Batch::phase`] split the recording into named phases, each compute pass timed
    /// by [`Batch::submit_nowait_phased`] (a breakdown: more passes than the one the batch
    /// would otherwise be, so slightly slower).
    pub fn time_phases(&mut self) {
        self.phases = true;
    }

    /// Starts a named phase (after [`Batch::time_phases`]; otherwise nothing): the next
    /// dispatch opens a compute pass of its own, timed under `name`.
    pub fn phase(&mut self, name: &'static str) {
        if self.phases {
            self.steps.push(Step::Phase(name));
        }
    }

    /// Lets [`Batch::submit_timed`] take timestamps around a batch with copies too: the
    /// first timestamp before the first step, the second after the last, copies between
    /// compute passes included (else such a batch is timed by the wall clock).
    pub fn time_copies(&mut self) {
        self.time_copies = true;
    }

    /// Opens a gated region: the dispatches recorded until [`Batch::end_gate`] run only when
    /// `flag[index]` is 0.0 when the region starts on the device, otherwise with empty grids
    /// (a GPU-side condition such as a solver's "stop" flag, so many iterations can be
    /// recorded in one submission without reading back). Buffer copies are not gated.
    pub fn begin_gate(&mut self, flag: &GpuBuffer<f32>, index: u32) -> Result<()> {
        if self.gate.is_some() {
            return Err(Error::Option("gated regions of a batch do not nest".into()));
        }
        if index as usize >= flag.len() {
            return Err(Error::Shape(format!(
                "gate flag index {index} past a buffer of {}",
                flag.len()
            )));
        }
        self.gate = Some(Gate {
            start: self.steps.len(),
            flag: flag.raw().clone(),
            index,
            dispatches: vec![],
        });
        Ok(())
    }

    /// Closes the gated region: records its `runtime.gate` dispatch (before the region's
    /// first step) and points the region's dispatches at the arguments it writes.
    pub fn end_gate(&mut self) -> Result<()> {
        let Some(gate) = self.gate.take() else {
            return Err(Error::Option("end_gate without begin_gate".into()));
        };
        if gate.dispatches.is_empty() {
            return Ok(());
        }
        let gpu = self.gpu;
        let count = gate.dispatches.len();
        let grids: Vec<[u32; 4]> = gate
            .dispatches
            .iter()
            .map(|(_, g)| [g[0], g[1], g[2], 0])
            .collect();
        let grids = GpuBuffer::upload(gpu, "batch.gate.grids", &grids)?;
        let args = gpu.scoped("batch.gate.args", || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("batch.gate.args"),
                size: (12 * count as u64).div_ceil(16) * 16,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                mapped_at_creation: false,
            })
        })?;
        for (slot, (step, _)) in gate.dispatches.iter().enumerate() {
            if let Some(Step::Dispatch { indirect, .. }) = self.steps.get_mut(*step) {
                *indirect = Some((args.clone(), 12 * slot as u64));
            }
        }
        let k = gpu.kernel(&KernelSpec {
            name: "runtime/gate",
            defines: vec![],
            constants: vec![],
            bindings: &GATE_BINDINGS,
        })?;
        let params = gpu.uniform("batch.gate", &[count as u32, gate.index, 0, 0]);
        // The flag's words up to its index: the rest of its buffer may lie past one binding.
        let flag = wgpu::BufferBinding {
            buffer: &gate.flag,
            offset: 0,
            size: wgpu::BufferSize::new(4 * (gate.index as u64 + 1)),
        };
        let bind_group = k.bind_ranges(
            gpu,
            &[
                params.as_entire_buffer_binding(),
                flag,
                grids.raw().as_entire_buffer_binding(),
                args.as_entire_buffer_binding(),
            ],
        )?;
        self.steps.insert(
            gate.start,
            Step::Dispatch {
                kernel: k,
                bind_group,
                grid: [1, 1, 1],
                indirect: None,
            },
        );
        Ok(())
    }

    /// The current place in the recording, for [`Batch::replay`]; an error inside a gated
    /// region (a replay must hold whole regions).
    pub fn mark(&self) -> Result<Mark> {
        if self.gate.is_some() {
            return Err(Error::Option("a batch mark inside a gated region".into()));
        }
        Ok(Mark(self.steps.len()))
    }

    /// Records again, `times` more times, everything recorded since `from` (same kernels,
    /// bind groups and gated regions: a gated region's copies share its arguments buffer, each
    /// copy's gate rewriting it before the copy's dispatches run), with no host work per
    /// dispatch but a clone. For a loop whose every pass is the same program on the same
    /// buffers (a solver's iterations).
    pub fn replay(&mut self, from: Mark, times: usize) -> Result<()> {
        if self.gate.is_some() {
            return Err(Error::Option("replay inside an open gated region".into()));
        }
        if from.0 > self.steps.len() {
            return Err(Error::Option("a batch mark from another recording".into()));
        }
        let tail = self.steps[from.0..].to_vec();
        for _ in 0..times {
            self.steps.extend(tail.iter().cloned());
        }
        Ok(())
    }

    /// Everything recorded, kept for [`Batch::append`] into later batches (phase markers
    /// included, after [`Batch::time_phases`]); an error with a gated region still open.
    pub fn into_recording(self) -> Result<Recording> {
        self.closed()?;
        Ok(Recording { steps: self.steps })
    }

    /// Records `recording` again, `times` times (its phase markers only after
    /// [`Batch::time_phases`]); not inside a gated region (a recording holds whole ones).
    pub fn append(&mut self, recording: &Recording, times: usize) -> Result<()> {
        if self.gate.is_some() {
            return Err(Error::Option(
                "a recording appended inside an open gated region".into(),
            ));
        }
        let phases = self.phases;
        let steps = recording
            .steps
            .iter()
            .filter(|s| phases || !matches!(s, Step::Phase(_)));
        for _ in 0..times {
            self.steps.extend(steps.clone().cloned());
        }
        Ok(())
    }

    /// The device this batch records for.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// Records one dispatch of `kernel` over `grid` workgroups (a zero-sized grid is skipped).
    pub fn dispatch(
        &mut self,
        kernel: &Arc<Kernel>,
        bind_group: wgpu::BindGroup,
        grid: [u32; 3],
    ) -> Result<()> {
        let max = self.gpu.caps.max_workgroups_per_dimension;
        if grid.iter().any(|&g| g > max) {
            return Err(Error::TooLarge {
                what: format!("dispatch of {}", kernel.label),
                needed: format!("{grid:?} workgroups"),
                limit: format!("{max} per dimension"),
            });
        }
        if grid.contains(&0) {
            return Ok(());
        }
        if let Some(gate) = &mut self.gate {
            gate.dispatches.push((self.steps.len(), grid));
        }
        self.steps.push(Step::Dispatch {
            kernel: kernel.clone(),
            bind_group,
            grid,
            indirect: None,
        });
        Ok(())
    }

    /// Records one dispatch of `kernel` whose grid is read on the device from words
    /// `3·slot .. 3·slot + 3` of `args` (x, y, z workgroups; a buffer made by
    /// [`GpuBuffer::zeroed_indirect`]), as an earlier dispatch of the batch wrote them: work
    /// sized on the GPU with no readback. The kernel must accept any grid the writer may
    /// produce (each extent within the device's per-dimension limit). Not inside a gated
    /// region (its grids are the gate's).
    pub fn dispatch_indirect(
        &mut self,
        kernel: &Arc<Kernel>,
        bind_group: wgpu::BindGroup,
        args: &GpuBuffer<u32>,
        slot: usize,
    ) -> Result<()> {
        if self.gate.is_some() {
            return Err(Error::Option(format!(
                "indirect dispatch of {} inside a gated region",
                kernel.label
            )));
        }
        if 3 * slot + 3 > args.len() {
            return Err(Error::Shape(format!(
                "indirect arguments slot {slot} past a buffer of {} words",
                args.len()
            )));
        }
        self.steps.push(Step::Dispatch {
            kernel: kernel.clone(),
            bind_group,
            grid: [0, 0, 0],
            indirect: Some((args.raw().clone(), 12 * slot as u64)),
        });
        Ok(())
    }

    /// Records a buffer-to-buffer copy of `bytes` bytes.
    pub fn copy(&mut self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) {
        self.steps.push(Step::Copy {
            src: src.clone(),
            dst: dst.clone(),
            bytes,
        });
    }

    /// Number of recorded dispatches.
    pub fn dispatches(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Dispatch { .. }))
            .count()
    }

    /// The indices of the steps that open a compute pass (a dispatch after anything else).
    fn pass_starts(&self) -> Vec<usize> {
        (0..self.steps.len())
            .filter(|&i| {
                matches!(self.steps[i], Step::Dispatch { .. })
                    && !matches!(
                        i.checked_sub(1).map(|j| &self.steps[j]),
                        Some(Step::Dispatch { .. })
                    )
            })
            .collect()
    }

    fn encode(&self, timing: Timing) -> (wgpu::CommandBuffer, Vec<&'static str>) {
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgsparse.batch"),
            });
        // Whole: the first pass writes the first timestamp and the last pass the second; a
        // copy at either end gets an empty pass of its own outside it to write that one.
        let whole = match timing {
            Timing::Whole(t) => Some(t),
            _ => None,
        };
        let is_copy = |s: Option<&Step>| matches!(s, Some(Step::Copy { .. }));
        let lead_copy = is_copy(self.steps.iter().find(|s| !matches!(s, Step::Phase(_))));
        let tail_copy = is_copy(
            self.steps
                .iter()
                .rev()
                .find(|s| !matches!(s, Step::Phase(_))),
        );
        let passes = self.pass_starts().len();
        let marker = |encoder: &mut wgpu::CommandEncoder, t: &Timestamps, begin: bool| {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgsparse.timestamp"),
                timestamp_writes: Some(t.pass_writes_ends(begin, !begin)),
            });
        };
        if let Some(t) = whole.filter(|_| lead_copy) {
            marker(&mut encoder, t, true);
        }
        let mut i = 0;
        let mut pass_no = 0;
        let mut phase = "batch";
        let mut names = vec![];
        while i < self.steps.len() {
            match &self.steps[i] {
                Step::Copy { src, dst, bytes } => {
                    encoder.copy_buffer_to_buffer(src, 0, dst, 0, *bytes);
                    i += 1;
                    continue;
                }
                Step::Phase(name) => {
                    phase = name;
                    i += 1;
                    continue;
                }
                Step::Dispatch { .. } => {}
            }
            let writes = match timing {
                Timing::None => None,
                Timing::Whole(t) => {
                    let begin = pass_no == 0 && !lead_copy;
                    let end = pass_no + 1 == passes && !tail_copy;
                    (begin || end).then(|| t.pass_writes_ends(begin, end))
                }
                Timing::Passes(t) => {
                    names.push(phase);
                    let k = 2 * pass_no as u32;
                    Some(t.pass_writes(Some(k), Some(k + 1)))
                }
            };
            pass_no += 1;
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgsparse.pass"),
                timestamp_writes: writes,
            });
            while let Some(Step::Dispatch {
                kernel,
                bind_group,
                grid,
                indirect,
            }) = self.steps.get(i)
            {
                pass.set_pipeline(&kernel.pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                match indirect {
                    Some((args, offset)) => pass.dispatch_workgroups_indirect(args, *offset),
                    None => pass.dispatch_workgroups(grid[0], grid[1], grid[2]),
                }
                i += 1;
            }
        }
        match timing {
            Timing::None => {}
            Timing::Whole(t) => {
                if tail_copy {
                    marker(&mut encoder, t, false);
                }
                t.resolve(&mut encoder);
            }
            Timing::Passes(t) => t.resolve(&mut encoder),
        }
        (encoder.finish(), names)
    }

    /// Submits everything recorded and waits for it to finish.
    pub fn submit(self) -> Result<()> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(Timing::None).0]))?;
        gpu.wait()
    }

    /// Submits everything recorded without waiting for it: later buffer writes and
    /// submissions are ordered after it on the queue; returns the submission, for
    /// [`Gpu::wait_for`] (or [`Gpu::wait`] before reading results back).
    pub fn submit_nowait(self) -> Result<wgpu::SubmissionIndex> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(Timing::None).0]))
    }

    /// [`Batch::submit_nowait`] with each compute pass timed, after [`Batch::time_phases`]
    /// when the adapter has timestamp queries and the passes fit one query set (else no
    /// times): read them with [`PhaseTimes::read`] once the work is done.
    pub fn submit_nowait_phased(self) -> Result<(wgpu::SubmissionIndex, Option<PhaseTimes>)> {
        let passes = self.pass_starts().len() as u64;
        if !(self.phases
            && self.gpu.caps.timestamps
            && passes > 0
            && 2 * passes <= MAX_TIMESTAMPS as u64)
        {
            return Ok((self.submit_nowait()?, None));
        }
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        let ts = Timestamps::with_count(gpu, 2 * passes as u32);
        let (commands, names) = self.encode(Timing::Passes(&ts));
        let submission = gpu.scoped(&labels, || gpu.queue.submit([commands]))?;
        Ok((submission, Some(PhaseTimes { ts, names })))
    }

    /// Submits and returns the GPU time of the work: from timestamp queries around the one
    /// compute pass when the adapter has them and the batch has no copies (or around all its
    /// passes and copies after [`Batch::time_copies`]), else wall clock around
    /// submit-and-wait.
    pub fn submit_timed(self) -> Result<GpuTime> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        let single_pass =
            self.time_copies || self.steps.iter().all(|s| !matches!(s, Step::Copy { .. }));
        if gpu.caps.timestamps && single_pass && !self.pass_starts().is_empty() {
            let ts = Timestamps::new(gpu);
            gpu.scoped(&labels, || {
                gpu.queue.submit([self.encode(Timing::Whole(&ts)).0])
            })?;
            return ts.read(gpu);
        }
        let start = std::time::Instant::now();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(Timing::None).0]))?;
        gpu.wait()?;
        Ok(GpuTime::wall(start.elapsed().as_secs_f64()))
    }

    fn closed(&self) -> Result<()> {
        match self.gate {
            Some(_) => Err(Error::Option(
                "a batch submitted with a gated region still open".into(),
            )),
            None => Ok(()),
        }
    }

    fn labels(&self) -> String {
        let mut names: Vec<&str> = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Dispatch { kernel, .. } => Some(kernel.label.as_str()),
                Step::Copy { .. } | Step::Phase(_) => None,
            })
            .collect();
        names.dedup();
        if names.is_empty() {
            "batch".into()
        } else {
            names.join("+")
        }
    }
}
