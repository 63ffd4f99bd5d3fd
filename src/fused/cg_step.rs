//! Recording `fused.cg_step`, CG's vector steps with their dot products and scalars, one
//! dispatch each (see `shaders/fused/cg_step.wgsl`), and the per-phase GPU-time breakdown
//! of a solve ([`CgBreakdown`]).

use std::sync::Arc;

use serde::Serialize;

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec, PhaseTime};
use crate::Result;

/// Invocations per workgroup of `fused.cg_step`.
const WG: u32 = 256;
/// Most workgroups of `fused.cg_step` (the last one sums this many partials at most, four per
/// invocation).
const GROUPS_MAX: u32 = 4 * WG;
/// Largest n run by one workgroup (at most 8 elements per invocation), whose update step also
/// does the next iteration's p update: one dispatch fewer per iteration.
pub(crate) const ONE_GROUP_MAX: usize = 8 * WG as usize;
/// Words of the hand-off buffer: the finished-workgroup count, then one partial per workgroup.
pub(crate) const SYNC_LEN: usize = 1 + GROUPS_MAX as usize;

/// params, the state, the hand-off words, w, r, p, q.
const BINDINGS: [Binding; 7] = [
    Binding::Uniform,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];

/// The steps of `fused.cg_step` (its `params.mode`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CgMode {
    /// w = 0, p = −r (and q = λ·p), r·r, the starting scalars.
    Start = 0,
    /// p = β·p − r (and q = λ·p).
    PUpdate = 1,
    /// p·q and α.
    Alpha = 2,
    /// w += α·p, r += α·q, r·r, β and the stopping test.
    Update = 3,
}

/// `fused.cg_step` bound to one solve's vectors: a bind group per mode over a uniform of its
/// own (rewritten by [`CgSteps::write_settings`]).
pub(crate) struct CgSteps {
    kernel: Arc<Kernel>,
    n: usize,
    groups: u32,
    params: Vec<wgpu::Buffer>,
    binds: Vec<wgpu::BindGroup>,
}

/// Workgroups of `fused.cg_step` over n elements.
fn groups(n: usize) -> u32 {
    if n <= ONE_GROUP_MAX {
        1
    } else {
        (n.div_ceil(WG as usize) as u32).clamp(1, GROUPS_MAX)
    }
}

/// CG's vectors and device state as `fused.cg_step` binds them (the state and w may be
/// ranges of one buffer, read back by one copy).
pub(crate) struct CgVectors<'a> {
    pub(crate) st: wgpu::BufferBinding<'a>,
    pub(crate) sync: &'a GpuBuffer<u32>,
    pub(crate) w: wgpu::BufferBinding<'a>,
    pub(crate) r: &'a GpuBuffer<f32>,
    pub(crate) p: &'a GpuBuffer<f32>,
    pub(crate) q: &'a GpuBuffer<f32>,
}

/// The scalar settings of a solve.
pub(crate) struct CgSettings {
    pub(crate) tol2: f32,
    pub(crate) max_iter: u32,
    pub(crate) lambda: f32,
    /// Start and PUpdate also write q = λ·p (the plan then adds onto q).
    pub(crate) init_q: bool,
}

impl CgSteps {
    /// The kernel and its four bind groups over vectors of n elements.
    pub(crate) fn new(gpu: &Gpu, n: usize, s: &CgSettings, v: &CgVectors) -> Result<Self> {
        let kernel = gpu.kernel(&KernelSpec {
            name: "fused/cg_step",
            defines: vec![],
            constants: vec![("WG", WG as f64)],
            bindings: &BINDINGS,
        })?;
        let groups = groups(n);
        let params: Vec<wgpu::Buffer> = (0..4u32)
            .map(|mode| gpu.uniform("fused.cg_step", &params(mode, n, groups, s)))
            .collect();
        let binds = params
            .iter()
            .map(|params| {
                kernel.bind_ranges(
                    gpu,
                    &[
                        params.as_entire_buffer_binding(),
                        v.st.clone(),
                        whole(v.sync),
                        v.w.clone(),
                        whole(v.r),
                        whole(v.p),
                        whole(v.q),
                    ],
                )
            })
            .collect::<Result<_>>()?;
        Ok(CgSteps {
            kernel,
            n,
            groups,
            params,
            binds,
        })
    }

    /// Rewrites every mode's settings (queued before the next submission; the bind groups,
    /// and the steps recorded with them, stay valid).
    pub(crate) fn write_settings(&self, gpu: &Gpu, s: &CgSettings) {
        for (mode, buffer) in self.params.iter().enumerate() {
            gpu.write_uniform_at(buffer, 0, &params(mode as u32, self.n, self.groups, s));
        }
    }

    /// Whether the update step also updates p (one workgroup): no [`CgMode::PUpdate`].
    pub(crate) fn folds_p(&self) -> bool {
        self.groups == 1
    }

    /// Records one step.
    pub(crate) fn record(&self, batch: &mut Batch, mode: CgMode) -> Result<()> {
        let bind = self.binds[mode as usize].clone();
        batch.dispatch(&self.kernel, bind, [self.groups, 1, 1])
    }
}

/// The uniform of one mode (`Params` of `shaders/fused/cg_step.wgsl`).
fn params(mode: u32, n: usize, groups: u32, s: &CgSettings) -> [u32; 8] {
    [
        mode,
        n as u32,
        s.tol2.to_bits(),
        s.max_iter,
        s.lambda.to_bits(),
        s.init_q as u32,
        (groups == 1) as u32,
        0,
    ]
}

fn whole<T: bytemuck::Pod>(b: &GpuBuffer<T>) -> wgpu::BufferBinding<'_> {
    b.raw().as_entire_buffer_binding()
}

/// GPU time of one phase of a solve, summed over its passes.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseTotal {
    /// `xtb` (r = −Xᵀb), `start` (p, q, r·r, the first scalars), `gate` (the iteration's
    /// stop test), `p_update`, `fused` (q += Xᵀ(X·p)), `alpha` (p·q, α), `update` (w, r, r·r,
    /// β, the stopping test).
    pub name: &'static str,
    /// Milliseconds.
    pub ms: f64,
    /// Compute passes timed (gated passes after the stop included: they run empty grids).
    pub passes: usize,
}

/// Where a solve's time went ([`crate::fused::linreg::CgOptions::breakdown`]): GPU time per
/// phase from timestamps around each phase's compute pass (the solve then runs as one pass
/// per phase instead of one pass per submission, so slightly slower), and the host's parts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CgBreakdown {
    /// GPU time per phase, in order of first appearance.
    pub phases: Vec<PhaseTotal>,
    /// From the first pass's beginning to the last one's end, summed over submissions.
    pub gpu_ms: f64,
    /// `gpu_ms` less the phases: between passes (barriers, pass boundaries).
    pub between_passes_ms: f64,
    /// Host: allocating the solve's buffers, binding its steps and recording the start step
    /// and the iterations ([`CgSolver::new`]; 0 for a solve on a workspace built before).
    ///
    /// [`CgSolver::new`]: crate::fused::linreg::CgSolver::new
    pub setup_ms: f64,
    /// Host: appending the recorded steps, encoding and submitting (the rest of the time not
    /// spent waiting); on labels other than the previous solve's (a first solve included),
    /// also recording and binding the r = −Xᵀb pass on them.
    pub record_ms: f64,
    /// Host: waiting for the device and reading the state (and w).
    pub wait_ms: f64,
    /// `wait_ms` less `gpu_ms`: the submissions' start latency, the read-back copy and the
    /// map (negative when the device ran part of the work while the host still recorded).
    pub wait_beyond_gpu_ms: f64,
    /// Whether the adapter gave timestamps (false: only the host parts are filled in).
    pub timed: bool,
}

impl CgBreakdown {
    /// Adds one submission's passes.
    pub(crate) fn add(&mut self, passes: &[PhaseTime]) {
        let (Some(first), Some(last)) = (passes.first(), passes.last()) else {
            return;
        };
        self.timed = true;
        self.gpu_ms += (last.end - first.start) * 1e3;
        for p in passes {
            let ms = (p.end - p.start) * 1e3;
            match self.phases.iter_mut().find(|t| t.name == p.name) {
                Some(t) => {
                    t.ms += ms;
                    t.passes += 1;
                }
                None => self.phases.push(PhaseTotal {
                    name: p.name,
                    ms,
                    passes: 1,
                }),
            }
        }
    }

    /// Fills in the derived and host parts (seconds; the setup is the caller's).
    pub(crate) fn finish(&mut self, record: f64, wait: f64) {
        let phases: f64 = self.phases.iter().map(|p| p.ms).sum();
        self.between_passes_ms = self.gpu_ms - phases;
        self.record_ms = record * 1e3;
        self.wait_ms = wait * 1e3;
        self.wait_beyond_gpu_ms = self.wait_ms - self.gpu_ms;
    }
}
