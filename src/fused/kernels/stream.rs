//! Recording `fused.stream`: the fused pattern over X's row tiles in CSR order
//! ([`crate::fused::stream`]).

use super::{finish_bindings, finishing, whole};
use crate::fused::config::stream_scratch_slots;
use crate::fused::{Op, Plan};
use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec, WG_F32_NATIVE};
use crate::{Error, Result};

/// Most rows (as log₂) a workgroup may take with fixed-point sums: 61 − 2·20 = 21 bits below
/// the largest product remain (shared/fixed_wg).
const MAX_LN_ROWS: u32 = 20;

use Binding::{Read, ReadWrite, Uniform};

const STREAM_BINDINGS: [Binding; 9] =
    [Uniform, Read, Read, Read, Read, Read, Read, Read, ReadWrite];
/// With FINISH: the counter, z and w.
const STREAM_FINISH_BINDINGS: [Binding; 12] = [
    Uniform, Read, Read, Read, Read, Read, Read, Read, ReadWrite, ReadWrite, Read, ReadWrite,
];

/// Records `fused.stream` adding α·Xᵀ(v ⊙ (X·y)) over X's tiles and long rows to w (which
/// holds β·z), or with the one-dispatch ending to the plan's accumulator, its last workgroup
/// writing w.
pub(super) fn stream(plan: &Plan, batch: &mut Batch, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let t = plan.stream.as_ref().expect("stream tiles");
    // X is one band (the stream copy fits one binding).
    let finish = finishing(plan, 0, w);
    let accum = plan.finish.as_ref().map_or(w, |f| &f.acc);
    let mut defs = vec![];
    if cfg.native_atomics {
        defs.push("F32_ATOMIC");
    }
    if cfg.wg_fixed {
        defs.push("WG_FIXED");
    } else if cfg.wg_native_atomics {
        defs.push(WG_F32_NATIVE);
    }
    if op.xty {
        defs.push("XTY");
    } else if cfg.y_shared {
        // Under XTY, y is per row (read once a row): nothing to copy.
        defs.push("Y_SHARED");
    }
    if cfg.prefetch {
        defs.push("PIPE");
    }
    if cfg.segmented {
        defs.push("SEGMENTED");
    }
    if cfg.key16 {
        defs.push("KEY16");
    }
    if cfg.unit > 0 {
        defs.push("UNITS");
    }
    if finish.is_some() {
        defs.push("FINISH");
    }
    defs.extend(cfg.diag.defines());
    let groups = cfg.groups.min(t.ntiles + t.nlong).max(1);
    // A pass over the items: only where the sums read it.
    let ln_rows = if cfg.wg_fixed { t.ln_rows(groups) } else { 0 };
    if ln_rows > MAX_LN_ROWS {
        return Err(Error::Unsupported(format!(
            "fixed-point sums of w: a workgroup of {groups} takes up to 2^{ln_rows} rows, \
             beyond 2^{MAX_LN_ROWS} (too few bits left below the largest product)"
        )));
    }
    let ncols = plan.n.max(1) as u32;
    let k = gpu.kernel(&KernelSpec {
        name: "fused/stream",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("EPL", (cfg.tile / cfg.tile_lanes()) as f64),
            ("RMAX", t.rows_max as f64),
            ("NCOLS", ncols as f64),
            ("WCOPIES", cfg.wg_copies as f64),
            ("WWORDS", (ncols * cfg.wg_copies) as f64),
            ("UNIT", cfg.unit.max(1) as f64),
            (
                "NSG",
                stream_scratch_slots(gpu, cfg.workgroup, cfg.segmented) as f64,
            ),
        ],
        bindings: if finish.is_some() {
            &STREAM_FINISH_BINDINGS
        } else {
            &STREAM_BINDINGS
        },
    })?;
    let params = gpu.uniform(
        "fused.stream.params",
        &[
            t.ntiles,
            plan.n as u32,
            op.v.is_some() as u32,
            op.alpha.to_bits(),
            op.beta.to_bits(),
            t.nlong,
            ln_rows,
            0,
        ],
    );
    let mut all = vec![
        params.as_entire_buffer_binding(),
        whole(&t.tiles),
        whole(&t.keys),
        whole(&t.values),
        whole(&t.lead),
        whole(&t.rows),
        whole(op.y),
        whole(op.v.unwrap_or(&plan.dummy)),
        whole(accum),
    ];
    if let Some(f) = finish {
        // After the stand-in the other kernels bind at 8: the counter, z and w.
        let [_, rest @ ..] = finish_bindings(plan, op, f);
        all.extend(rest);
    }
    let bg = k.bind_ranges(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}
