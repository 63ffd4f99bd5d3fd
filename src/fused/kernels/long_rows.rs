//! Recording `fused.long_rows`: the long-row dot pre-pass and the unfolded scatter
//! ([`crate::fused::long`]).

use super::{axpy, whole, Entries};
use crate::fused::bands::{self, SparseBand};
use crate::fused::{Op, Plan};
use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use crate::Result;

use Binding::{Read, ReadWrite, Uniform};

const LONG_DOT_BINDINGS: [Binding; 6] = [Uniform, Read, Read, Read, Read, ReadWrite];
/// The folded dot pre-pass: per-chunk partials, then z and w (initialised to β·z).
const LONG_PARTIAL_BINDINGS: [Binding; 8] =
    [Uniform, Read, Read, Read, Read, ReadWrite, Read, ReadWrite];
const LONG_SCATTER_BINDINGS: [Binding; 8] =
    [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite];
/// Workgroup size of the long-row kernels.
const LONG_WG: u32 = 256;

/// A pass of `fused.long_rows`.
#[derive(Clone, Copy)]
pub(super) enum LongPass<'a> {
    /// The dot products: folded, per-chunk partials with w = β·z initialised by band 0's pass
    /// (z already the stand-in when β = 0); else per-row sums into zeroed slots.
    Dot {
        z: &'a GpuBuffer<f32>,
        w: &'a GpuBuffer<f32>,
    },
    /// The unfolded scatter into w.
    Scatter(&'a GpuBuffer<f32>),
}

/// Records band `b`'s long-row pass (`fused.long_rows`); nothing when the plan has no long
/// rows, or the band has no chunks (but the folded dot pass of band 0, which initialises w).
pub(super) fn long_rows(
    plan: &Plan,
    batch: &mut Batch,
    (b, band): (usize, &SparseBand),
    (col_idx, values): Entries,
    op: &Op,
    pass: LongPass,
) -> Result<()> {
    let Some(l) = plan.long.as_ref() else {
        return Ok(());
    };
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let dot = matches!(pass, LongPass::Dot { .. });
    let init = dot && l.folded && b == 0;
    if dot && !l.folded && b == 0 {
        axpy(
            batch,
            l.dots.len(),
            0.0,
            &plan.dummy,
            0.0,
            &plan.dummy,
            &l.dots,
        )?;
    }
    let mut defs = vec![];
    if cfg.native_atomics {
        defs.push("F32_ATOMIC");
    }
    if dot {
        defs.push("DOT");
        if l.folded {
            defs.push("PARTIAL");
        }
    } else if op.xty {
        defs.push("XTY");
    }
    // The scatter into a workgroup copy of w when it fits: the fewest workgroups that fill
    // the device (the largest size) take every chunk and add to global w once per column
    // each, instead of once per entry.
    let shared = !dot && 4 * plan.n as u64 <= gpu.caps.max_workgroup_storage_bytes as u64;
    let (chunks, nchunks, base) = (&l.chunks[b].0, l.chunks[b].1, l.chunks[b].2);
    if nchunks == 0 && !init {
        return Ok(());
    }
    let max_groups = gpu.caps.max_workgroups_per_dimension;
    let mut groups = nchunks.min(max_groups).max(1);
    if init {
        groups = groups.max(crate::fused::vectors::elementwise_groups(plan.n).min(max_groups));
    }
    let mut wg = LONG_WG;
    if shared {
        defs.push("SHARED_W");
        wg = gpu.caps.max_invocations_per_workgroup.clamp(LONG_WG, 1024);
        let r = crate::fused::plan::Residency::of(&gpu.caps);
        groups = groups.min(
            r.units
                .saturating_mul(r.groups_resident(wg, 4 * plan.n as u32)),
        );
    }
    // Under a device's loop cap, enough workgroups that each takes few enough chunks (a chunk:
    // its entries over the workgroup, a compare-exchange loop each).
    if let Some(budget) = crate::gpu::loop_cap::budget(gpu.caps.loop_cap) {
        let per_chunk = 2 * (crate::fused::long::CHUNK_MAX as u64).div_ceil(wg as u64) + 1;
        let fixed = if shared {
            crate::fused::loops::workgroup_w(plan.n, wg)
        } else {
            1
        };
        let each = (budget.saturating_sub(fixed) / per_chunk).max(1);
        let need = (nchunks as u64).div_ceil(each).min(max_groups as u64) as u32;
        groups = groups.max(need);
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/long_rows",
        defines: defs,
        constants: vec![
            ("WG", wg as f64),
            ("NCOLS", if shared { plan.n.max(1) } else { 1 } as f64),
        ],
        bindings: match pass {
            LongPass::Dot { .. } if l.folded => &LONG_PARTIAL_BINDINGS,
            LongPass::Dot { .. } => &LONG_DOT_BINDINGS,
            LongPass::Scatter(_) => &LONG_SCATTER_BINDINGS,
        },
    })?;
    let params = gpu.uniform(
        "fused.long_rows.params",
        &[
            nchunks,
            op.v.is_some() as u32 | (init as u32) << 1,
            op.alpha.to_bits(),
            base,
            plan.n as u32,
            op.beta.to_bits(),
            0,
            0,
        ],
    );
    // Chunks hold X's rows (for v and y of `xty`) and positions in the band's window.
    let mut all = vec![
        params.as_entire_buffer_binding(),
        whole(chunks),
        bands::window(col_idx, band),
        bands::window(values, band),
        whole(op.y),
    ];
    match pass {
        LongPass::Dot { z, w } if l.folded => all.extend([whole(&l.dots), whole(z), whole(w)]),
        LongPass::Dot { .. } => all.push(whole(&l.dots)),
        LongPass::Scatter(w) => {
            all.extend([whole(op.v.unwrap_or(&plan.dummy)), whole(&l.dots), whole(w)])
        }
    }
    let bg = k.bind_ranges(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}
