//! Recording many dispatches and submitting them once.

use std::sync::Arc;

use crate::gpu::timer::{GpuTime, Timestamps};
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
}

/// A list of dispatches (and buffer copies) recorded by kernel functions and submitted in
/// one command buffer; consecutive dispatches share one compute pass. wgpu orders
/// dispatches in a pass that touch the same buffer, so later steps see earlier results.
pub struct Batch<'g> {
    gpu: &'g Gpu,
    steps: Vec<Step>,
    gate: Option<Gate>,
    /// [`Batch::submit_timed`] brackets copies too (see [`Batch::time_copies`]).
    time_copies: bool,
}

/// A place in a batch's recording outside any gated region ([`Batch::mark`]), from which
/// [`Batch::replay`] repeats what was recorded after it.
#[derive(Clone, Copy, Debug)]
pub struct Mark(usize);

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
        let bind_group = k.bind(gpu, &[&params, &gate.flag, grids.raw(), &args])?;
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

    fn encode(&self, timestamps: Option<&Timestamps>) -> wgpu::CommandBuffer {
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgsparse.batch"),
            });
        // With timestamps, the first pass writes the first and the last pass the second; a
        // copy at either end gets an empty pass of its own outside it to write that one.
        let is_copy = |s: Option<&Step>| matches!(s, Some(Step::Copy { .. }));
        let (lead_copy, tail_copy) = (is_copy(self.steps.first()), is_copy(self.steps.last()));
        let passes = (0..self.steps.len())
            .filter(|&i| {
                matches!(self.steps[i], Step::Dispatch { .. })
                    && (i == 0 || is_copy(self.steps.get(i - 1)))
            })
            .count();
        let marker = |encoder: &mut wgpu::CommandEncoder, t: &Timestamps, begin: bool| {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgsparse.timestamp"),
                timestamp_writes: Some(t.pass_writes_ends(begin, !begin)),
            });
        };
        if let Some(t) = timestamps.filter(|_| lead_copy) {
            marker(&mut encoder, t, true);
        }
        let mut i = 0;
        let mut pass_no = 0;
        while i < self.steps.len() {
            if let Step::Copy { src, dst, bytes } = &self.steps[i] {
                encoder.copy_buffer_to_buffer(src, 0, dst, 0, *bytes);
                i += 1;
                continue;
            }
            let writes = timestamps.and_then(|t| {
                let begin = pass_no == 0 && !lead_copy;
                let end = pass_no + 1 == passes && !tail_copy;
                (begin || end).then(|| t.pass_writes_ends(begin, end))
            });
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
        if let Some(t) = timestamps {
            if tail_copy {
                marker(&mut encoder, t, false);
            }
            t.resolve(&mut encoder);
        }
        encoder.finish()
    }

    /// Submits everything recorded and waits for it to finish.
    pub fn submit(self) -> Result<()> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(None)]))?;
        gpu.wait()
    }

    /// Submits everything recorded without waiting for it: later buffer writes and
    /// submissions are ordered after it on the queue; returns the submission, for
    /// [`Gpu::wait_for`] (or [`Gpu::wait`] before reading results back).
    pub fn submit_nowait(self) -> Result<wgpu::SubmissionIndex> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(None)]))
    }

    /// Submits and returns the GPU time of the work: from timestamp queries around the one
    /// compute pass when the adapter has them and the batch has no copies (or around all its
    /// passes and copies after [`Batch::time_copies`]), else wall clock around
    /// submit-and-wait.
    pub fn submit_timed(self) -> Result<GpuTime> {
        self.closed()?;
        let gpu = self.gpu;
        let labels = self.labels();
        let single_pass = self.time_copies
            || self
                .steps
                .iter()
                .all(|s| matches!(s, Step::Dispatch { .. }));
        if gpu.caps.timestamps && single_pass && !self.steps.is_empty() {
            let ts = Timestamps::new(gpu);
            gpu.scoped(&labels, || gpu.queue.submit([self.encode(Some(&ts))]))?;
            return ts.read(gpu);
        }
        let start = std::time::Instant::now();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(None)]))?;
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
                Step::Copy { .. } => None,
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
