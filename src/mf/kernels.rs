//! Choosing the update layout and recording the `mf` kernels: `mf.hogwild`, `mf.wavefront`
//! (training), `mf.finite` and `mf.rmse` (evaluation).

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::mf::{Options, Precision, Scheme, Trainer};
use crate::{Error, Result};

/// Most words (feature pairs) one lane holds; `MAX_PER` in `mf/sgd.wgsl`.
const MAX_PER: u32 = 32;
/// Invocations per workgroup of the hogwild, rmse and finite kernels.
const WG: u32 = 256;
/// Most updates one hogwild worker performs in one dispatch; an epoch takes as many
/// dispatches as it needs (in one submission, the PCG states carried in `mf.rng`, so the
/// sequence of updates is the same as in one dispatch). The reason is Mesa's llvmpipe
/// (lavapipe): gallivm guards against endless loops with a limiter of 65,535 loop
/// iterations per invocation, shared by every loop of the shader, after which each loop
/// exits early, silently (measured: a lone worker's single-dispatch epoch stopped after
/// 13,047 of 36,096 updates, about 5 loop iterations each at k = 32). 1,024 updates stay
/// inside it on every path (`a_lone_worker_does_every_update_of_a_long_epoch` runs the
/// heaviest, k = 256 without subgroups). On a hardware GPU each extra dispatch costs a
/// launch and a drain (every worker waits for the slowest); [`Options::dispatch_updates`]
/// raises the bound there.
pub(crate) const UPDATES_PER_DISPATCH: u32 = 1024;

const HOGWILD: [Binding; 6] = [
    Binding::Uniform,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const WAVEFRONT: [Binding; 9] = [
    Binding::Uniform,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const RMSE: [Binding; 5] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
];
const FINITE: [Binding; 4] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
];

/// How one update maps onto lanes, and the storage path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Lanes per update (a power of two dividing k/2).
    pub lanes: u32,
    /// Words each lane holds (k / 2 / lanes).
    pub per: u32,
    /// Reduce with subgroup shuffles (else workgroup memory).
    pub subgroup: bool,
    /// f16 storage as native vec2<f16>.
    pub native_f16: bool,
    /// f16 storage (native or packed).
    pub half: bool,
    /// P and Q bound with the `@coherent` decoration in the training kernels.
    pub coherent: bool,
    /// Batch-Hogwild! with `coherent`: P too (false: Q alone).
    pub coherent_p: bool,
    /// Batch-Hogwild! stages its samples in the lanes (subgroup shuffles, lanes ≥ ILP).
    pub stage: bool,
    /// Batch-Hogwild!: adjacent words a lane loads and stores as one access (1, 2 or 4,
    /// dividing `per`).
    pub vector: u32,
    /// Batch-Hogwild!: most updates a worker performs in one dispatch.
    pub dispatch_updates: u32,
    /// Batch-Hogwild!: invocations per workgroup (a multiple of `lanes`).
    pub workgroup: u32,
}

impl Layout {
    pub(crate) fn choose(gpu: &Gpu, o: &Options) -> Result<Self> {
        let words = (o.k / 2) as u32;
        let fit = |max: u32| {
            let mut lanes = 1;
            while lanes * 2 <= max.min(32) && words.is_multiple_of(lanes * 2) {
                lanes *= 2;
            }
            lanes
        };
        let caps = &gpu.caps;
        let hogwild = o.scheme == Scheme::Hogwild;
        let mut subgroup = o.subgroups && caps.subgroups;
        let lanes = match o.lanes.filter(|_| hogwild) {
            Some(lanes) => {
                if !lanes.is_power_of_two()
                    || lanes > 32
                    || lanes > words
                    || words / lanes > MAX_PER
                {
                    return Err(Error::Option(format!(
                        "lanes = {lanes}: must be a power of two up to 32 with k/2 / lanes \
                         from 1 to {MAX_PER} (k = {})",
                        o.k
                    )));
                }
                // Wider than the adapter's subgroups: the workgroup-memory reduction.
                subgroup = subgroup && caps.shuffle_fits(lanes);
                lanes
            }
            None => {
                let mut lanes = fit(if subgroup { caps.subgroup_min_size } else { 32 });
                if words / lanes > MAX_PER {
                    // Subgroups too narrow for this k: the workgroup-memory reduction takes
                    // any width.
                    subgroup = false;
                    lanes = fit(32);
                }
                if !subgroup || lanes > caps.subgroup_min_size {
                    subgroup = subgroup && caps.shuffle_fits(lanes);
                }
                lanes
            }
        };
        let per = words / lanes;
        // The most words per access up to the option that divides a lane's share.
        let mut vector = if hogwild { o.vector } else { 1 };
        while !per.is_multiple_of(vector) {
            vector /= 2;
        }
        let dispatch_updates = o
            .dispatch_updates
            .filter(|_| hogwild)
            .unwrap_or(UPDATES_PER_DISPATCH);
        if let Some(cap) = caps
            .loop_cap
            .filter(|_| dispatch_updates > UPDATES_PER_DISPATCH)
        {
            return Err(Error::Option(format!(
                "dispatch_updates = {dispatch_updates}: at most {UPDATES_PER_DISPATCH} on {}, \
                 whose loop cap ({cap} iterations per invocation) would cut longer dispatches \
                 short",
                caps.adapter_name
            )));
        }
        let workgroup = o.workgroup.filter(|_| hogwild).unwrap_or(WG);
        if !workgroup.is_power_of_two()
            || workgroup < lanes
            || workgroup > caps.max_invocations_per_workgroup
        {
            return Err(Error::Option(format!(
                "workgroup = {workgroup}: must be a power of two from the {lanes} lanes of an \
                 update to {} invocations",
                caps.max_invocations_per_workgroup
            )));
        }
        let half = o.precision == Precision::F16;
        Ok(Layout {
            lanes,
            per,
            subgroup,
            native_f16: half && o.native_f16 && caps.f16,
            half,
            coherent: o.coherent && caps.coherent,
            coherent_p: o.coherent_p || !hogwild,
            stage: o.stage && subgroup && lanes >= o.ilp,
            vector,
            dispatch_updates,
            workgroup,
        })
    }

    fn defines(&self) -> Vec<&'static str> {
        let mut d = vec![];
        if self.subgroup {
            d.push("SUBGROUP");
        }
        if self.native_f16 {
            d.push("F16");
        } else if self.half {
            d.push("PACKED");
        }
        d
    }
}

/// The worker count: the option, or min(m, n)/2 capped at 8192 (wavefront 1024). Each
/// worker's PCG state is one `u32` of a storage binding, checked here before the states are
/// built on the host (a huge `--workers` is an error, not gigabytes of host memory).
pub(crate) fn workers(gpu: &Gpu, o: &Options, m: usize, n: usize) -> Result<u32> {
    let cap = if o.scheme == Scheme::Wavefront {
        1024
    } else {
        8192
    };
    let w = o
        .workers
        .unwrap_or_else(|| (m.min(n) / 2).clamp(1, cap) as u32);
    if w == 0 {
        return Err(Error::Option("workers must be ≥ 1".into()));
    }
    let (bytes, limit) = (w as u64 * 4, gpu.caps.max_storage_binding_bytes);
    if bytes > limit {
        return Err(Error::TooLarge {
            what: format!("the PCG states of {w} workers"),
            needed: format!("{bytes} bytes in one storage binding"),
            limit: format!("{limit} bytes on {}", gpu.caps.adapter_name),
        });
    }
    if o.scheme == Scheme::Wavefront && w as usize > m {
        return Err(Error::Option(format!(
            "wavefront: {w} workers need at least as many users (have {m}), one row block each"
        )));
    }
    Ok(w)
}

/// The wavefront's block grid and its lock state.
pub(crate) struct Grid {
    offsets: GpuBuffer<u32>,
    order: GpuBuffer<u32>,
    locks: GpuBuffer<u32>,
    check: Option<GpuBuffer<u32>>,
    workers: u32,
    cols: u32,
}

impl Grid {
    pub(crate) fn new(
        gpu: &Gpu,
        offsets: &[u32],
        workers: u32,
        cols: u32,
        instrument: bool,
    ) -> Result<Self> {
        let cells = workers as usize * cols as usize;
        GpuBuffer::<u32>::check_fits(gpu, "wavefront block offsets", cells + 1)?;
        Ok(Grid {
            offsets: GpuBuffer::upload(gpu, "mf.offsets", offsets)?,
            order: GpuBuffer::zeroed(gpu, "mf.order", cells)?,
            locks: GpuBuffer::upload(gpu, "mf.locks", &vec![0u32; cols as usize])?,
            check: if instrument {
                Some(GpuBuffer::upload(
                    gpu,
                    "mf.check",
                    &vec![0u32; cols as usize + 2],
                )?)
            } else {
                None
            },
            workers,
            cols,
        })
    }

    /// (block entries, violations) counted by an instrumented run.
    pub(crate) fn check_counts(&self, gpu: &Gpu) -> Result<(u64, u64)> {
        match &self.check {
            Some(c) => {
                let v = c.read(gpu)?;
                let c = self.cols as usize;
                Ok((v[c + 1] as u64, v[c] as u64))
            }
            None => Ok((0, 0)),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct HogwildParams {
    nnz: u32,
    batches: u32,
    batch: u32,
    workers: u32,
    lr: f32,
    lambda: f32,
    pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct WavefrontParams {
    workers: u32,
    cols: u32,
    lr: f32,
    lambda: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct RmseParams {
    n: u32,
    scale: f32,
    pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct FiniteParams {
    p_words: u32,
    q_words: u32,
    pad: [u32; 2],
}

/// Records one epoch with learning rate `lr`.
pub(crate) fn record_epoch(t: &Trainer, batch: &mut Batch, lr: f32) -> Result<()> {
    let gpu = t.gpu;
    let l = &t.layout;
    let lambda = (t.options.lambda as f64 / t.sigma) as f32;
    if let Some(g) = &t.wavefront {
        let mut defines = l.defines();
        if l.coherent {
            defines.push("COHERENT");
        }
        let constants = vec![("LANES", l.lanes as f64), ("PER", l.per as f64)];
        if g.check.is_some() {
            defines.push("CHECK");
        }
        let mut c = constants;
        let streams = t.options.streams;
        c.push(("STREAMS", streams as f64));
        c.push(("WG", (l.lanes * streams) as f64));
        let n_bind = if g.check.is_some() { 9 } else { 8 };
        let kernel = gpu.kernel(&KernelSpec {
            name: "mf/wavefront",
            defines,
            constants: c,
            bindings: &WAVEFRONT[..n_bind],
        })?;
        let params = gpu.uniform(
            "mf.wavefront.params",
            &WavefrontParams {
                workers: g.workers,
                cols: g.cols,
                lr,
                lambda,
            },
        );
        let (samples, _) = &t.bands[0];
        let mut buffers = vec![
            &params,
            samples.raw(),
            t.p.raw(),
            t.q.raw(),
            t.rng.raw(),
            g.offsets.raw(),
            g.order.raw(),
            g.locks.raw(),
        ];
        if let Some(c) = &g.check {
            buffers.push(c.raw());
        }
        let bind = kernel.bind(gpu, &buffers)?;
        return batch.dispatch(&kernel, bind, gpu.grid(g.workers)?);
    }
    record_hogwild(
        batch,
        &Pass {
            gpu,
            layout: l,
            p: &t.p,
            q: &t.q,
            rng: &t.rng,
            counters: t.counters.as_ref(),
            batch: t.options.batch,
            ilp: t.options.ilp,
            lambda,
        },
        &t.bands,
        lr,
    )
}

/// What a batch-Hogwild! pass binds besides its samples: one device's P and Q (the rows its
/// samples index), its workers' PCG states and the optional update counter.
pub(crate) struct Pass<'a> {
    pub gpu: &'a Gpu,
    pub layout: &'a Layout,
    pub p: &'a GpuBuffer<u32>,
    pub q: &'a GpuBuffer<u32>,
    pub rng: &'a GpuBuffer<u32>,
    pub counters: Option<&'a GpuBuffer<u32>>,
    /// Consecutive samples per batch (f).
    pub batch: u32,
    /// Samples a worker updates together ([`Options::ilp`]).
    pub ilp: u32,
    /// λ as the device applies it (λ / σ).
    pub lambda: f32,
}

/// Records batch-Hogwild! over `bands` (samples, count) with learning rate `lr`: every
/// worker (one per PCG state) takes ⌈nnz/(s·f)⌉ batches of each band, at most
/// [`Layout::dispatch_updates`] updates per worker and dispatch (at least one batch). Empty
/// bands are skipped.
pub(crate) fn record_hogwild(
    batch: &mut Batch,
    pass: &Pass,
    bands: &[(GpuBuffer<u32>, u32)],
    lr: f32,
) -> Result<()> {
    let gpu = pass.gpu;
    let l = pass.layout;
    let mut defines = l.defines();
    if l.coherent {
        defines.push("COHERENT");
        if !l.coherent_p {
            defines.push("P_CACHED");
        }
    }
    if pass.counters.is_some() {
        defines.push("COUNT");
    }
    if l.stage {
        defines.push("STAGE");
    }
    match l.vector {
        4 => defines.push("VEC4"),
        2 => defines.push("VEC2"),
        _ => {}
    }
    let c = vec![
        ("LANES", l.lanes as f64),
        ("PER", l.per as f64),
        ("WG", l.workgroup as f64),
        ("ILP", pass.ilp as f64),
    ];
    let n_bind = if pass.counters.is_some() { 6 } else { 5 };
    let kernel = gpu.kernel(&KernelSpec {
        name: "mf/hogwild",
        defines,
        constants: c,
        bindings: &HOGWILD[..n_bind],
    })?;
    let workers = pass.rng.len() as u32;
    let per_wg = l.workgroup / l.lanes;
    let f = pass.batch;
    let per_dispatch = (l.dispatch_updates / f).max(1);
    for (samples, nnz) in bands.iter().filter(|(_, n)| *n > 0) {
        let batches = (*nnz as u64).div_ceil(workers as u64 * f as u64) as u32;
        let mut done = 0;
        while done < batches {
            let now = per_dispatch.min(batches - done);
            let params = gpu.uniform(
                "mf.hogwild.params",
                &HogwildParams {
                    nnz: *nnz,
                    batches: now,
                    batch: f,
                    workers,
                    lr,
                    lambda: pass.lambda,
                    pad: [0; 2],
                },
            );
            let mut buffers = vec![
                &params,
                samples.raw(),
                pass.p.raw(),
                pass.q.raw(),
                pass.rng.raw(),
            ];
            if let Some(c) = pass.counters {
                buffers.push(c.raw());
            }
            let bind = kernel.bind(gpu, &buffers)?;
            batch.dispatch(&kernel, bind, gpu.grid(workers.div_ceil(per_wg))?)?;
            done += now;
        }
    }
    Ok(())
}

/// Updates one batch-Hogwild! pass over bands of these sample counts performs with
/// `workers` workers and batches of `f`: s·⌈nnz/(s·f)⌉·f per non-empty band.
pub(crate) fn hogwild_updates(counts: impl Iterator<Item = u64>, workers: u64, f: u64) -> u64 {
    counts.map(|n| workers * n.div_ceil(workers * f) * f).sum()
}

/// What evaluation binds on one device: its P and Q, and its test samples in bands (u32
/// triplets: a row of `p`, a row of `q`, bits of r in rating units).
pub(crate) struct Eval<'a> {
    pub gpu: &'a Gpu,
    pub layout: &'a Layout,
    pub p: &'a GpuBuffer<u32>,
    pub q: &'a GpuBuffer<u32>,
    pub test: &'a [(GpuBuffer<u32>, u32)],
    /// σ: predictions are σ·p_u·q_v.
    pub sigma: f64,
}

/// What [`score`] found on one device.
pub(crate) struct Score {
    /// A word of P or Q holds NaN or infinity.
    pub diverged: bool,
    /// Σ (r − σ·p_u·q_v)² over the test samples, summed in f32 on the device (0 without
    /// test samples; not read when `diverged`).
    pub sse: f64,
}

/// Runs the divergence guard (`mf.finite`) over P and Q and `mf.rmse` over each non-empty
/// test band, in one submission, and reads back the flag and (unless it is set) the sum.
pub(crate) fn score(e: &Eval) -> Result<Score> {
    let gpu = e.gpu;
    let l = e.layout;
    let bad = GpuBuffer::<u32>::upload(gpu, "mf.bad", &[0])?;
    let finite = gpu.kernel(&KernelSpec {
        name: "mf/finite",
        defines: if l.half { vec!["HALF"] } else { vec![] },
        constants: vec![("WG", WG as f64)],
        bindings: &FINITE,
    })?;
    let params = gpu.uniform(
        "mf.finite.params",
        &FiniteParams {
            p_words: e.p.len() as u32,
            q_words: e.q.len() as u32,
            pad: [0; 2],
        },
    );
    let mut batch = Batch::new(gpu);
    let groups = (e.p.len().max(e.q.len()) as u32)
        .div_ceil(WG)
        .clamp(1, 1024);
    let bind = finite.bind(gpu, &[&params, e.p.raw(), e.q.raw(), bad.raw()])?;
    batch.dispatch(&finite, bind, [groups, 1, 1])?;
    let sse = GpuBuffer::<f32>::upload(gpu, "mf.sse", &[0.0])?;
    let bands: Vec<_> = e.test.iter().filter(|(_, n)| *n > 0).collect();
    if !bands.is_empty() {
        let mut defines = l.defines();
        if gpu.caps.f32_atomics {
            defines.push("F32_ATOMIC");
        }
        let rmse = gpu.kernel(&KernelSpec {
            name: "mf/rmse",
            defines,
            constants: vec![
                ("WG", WG as f64),
                ("LANES", l.lanes as f64),
                ("PER", l.per as f64),
            ],
            bindings: &RMSE,
        })?;
        for (test, n) in bands.iter().copied() {
            let params = gpu.uniform(
                "mf.rmse.params",
                &RmseParams {
                    n: *n,
                    scale: e.sigma as f32,
                    pad: [0; 2],
                },
            );
            let groups = n.div_ceil(WG / l.lanes).clamp(1, 1024);
            let bind = rmse.bind(gpu, &[&params, test.raw(), e.p.raw(), e.q.raw(), sse.raw()])?;
            batch.dispatch(&rmse, bind, [groups, 1, 1])?;
        }
    }
    batch.submit()?;
    let diverged = bad.read(gpu)?[0] != 0;
    let sse = if diverged || bands.is_empty() {
        0.0
    } else {
        sse.read(gpu)?[0] as f64
    };
    Ok(Score { diverged, sse })
}

/// The error of a model found holding NaN or infinity after `epoch` epochs.
pub(crate) fn diverged(o: &Options, epoch: usize) -> Error {
    Error::Diverged {
        epoch,
        message: format!(
            "P or Q holds NaN or infinity (lr {}, λ {}): lower alpha",
            o.learning_rate(epoch.saturating_sub(1)),
            o.lambda
        ),
    }
}

/// The divergence guard, then the test RMSE (see [`Trainer::evaluate`]).
pub(crate) fn evaluate(t: &Trainer) -> Result<Option<f64>> {
    let s = score(&Eval {
        gpu: t.gpu,
        layout: &t.layout,
        p: &t.p,
        q: &t.q,
        test: t.test.as_slice(),
        sigma: t.sigma,
    })?;
    if s.diverged {
        return Err(diverged(&t.options, t.epoch));
    }
    Ok(t.test.as_ref().map(|(_, n)| (s.sse / *n as f64).sqrt()))
}
