//! Recording `fused.sorted`: the scatter over a band's column-sorted tiles ([`crate::fused::tiles`]).

use super::{defines, finish_bindings, finishing, whole};
use crate::fused::bands::{self, SparseBand};
use crate::fused::{Op, Plan};
use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use crate::Result;

use Binding::{Read, ReadWrite, Uniform};

const SORTED_BINDINGS: [Binding; 8] = [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite];
const SORTED_WIDE_BINDINGS: [Binding; 9] =
    [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite, Read];
/// `fused.sorted` with LONG: the columns (or a stand-in), the long-row chunks, their partials.
const SORTED_LONG_BINDINGS: [Binding; 11] = [
    Uniform, Read, Read, Read, Read, Read, Read, ReadWrite, Read, Read, Read,
];
/// `fused.sorted` with FINISH: the columns (or a stand-in), the counter, z and w.
const SORTED_FINISH_BINDINGS: [Binding; 12] = [
    Uniform, Read, Read, Read, Read, Read, Read, ReadWrite, Read, ReadWrite, Read, ReadWrite,
];

/// Records `fused.sorted` on band `b`: the scatter over the band's column-sorted tiles.
pub(super) fn sorted(
    plan: &Plan,
    batch: &mut Batch,
    (b, band): (usize, &SparseBand),
    op: &Op,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let t = plan.sorted.as_ref().expect("sorted tiles");
    let (tile_rows, ntiles) = (&t.rows[b].0, t.rows[b].1);
    // The folded sequence: this band's long-row chunks after its tiles.
    let long = plan.long.as_ref().filter(|l| l.folded);
    let nlong = long.map_or(0, |l| l.chunks[b].1);
    // FINISH: every band adds to the accumulator, the last one (always dispatched) ends w.
    let finish = finishing(plan, b, w);
    let accum = plan.finish.as_ref().map_or(w, |f| &f.acc);
    if ntiles == 0 && nlong == 0 && finish.is_none() {
        return Ok(());
    }
    let mut defs = defines(cfg, op.xty, false, cfg.workgroup_w);
    defs.retain(|&d| d != "SUBGROUP_WIDE");
    if cfg.segmented {
        defs.push("SEGMENTED");
    }
    if t.cols.is_some() {
        defs.push("WIDE");
    }
    if long.is_some() {
        defs.push("LONG");
    }
    if finish.is_some() {
        defs.push("FINISH");
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/sorted",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("EPL", (cfg.tile / cfg.workgroup) as f64),
            ("POS_BITS", t.pos_bits as f64),
            ("TILE", cfg.tile as f64),
            (
                "NCOLS",
                if cfg.workgroup_w { plan.n.max(1) } else { 1 } as f64,
            ),
        ],
        bindings: if long.is_some() {
            &SORTED_LONG_BINDINGS
        } else if finish.is_some() {
            &SORTED_FINISH_BINDINGS
        } else if t.cols.is_some() {
            &SORTED_WIDE_BINDINGS
        } else {
            &SORTED_BINDINGS
        },
    })?;
    let params = gpu.uniform(
        "fused.sorted.params",
        &[
            ntiles,
            plan.n as u32,
            op.v.is_some() as u32,
            op.alpha.to_bits(),
            band.rows.start as u32,
            nlong,
            op.beta.to_bits(),
            0,
        ],
    );
    let mut all = vec![
        params.as_entire_buffer_binding(),
        band.row_ptr.raw().as_entire_buffer_binding(),
        whole(tile_rows),
        bands::window(&t.keys, band),
        bands::window(&t.values, band),
        whole(op.y),
        whole(op.v.unwrap_or(&plan.dummy)),
        whole(accum),
    ];
    if let Some(c) = &t.cols {
        all.push(bands::window(c, band));
    }
    if let Some(l) = long {
        if t.cols.is_none() {
            all.push(whole(&plan.dummy));
        }
        all.extend([whole(&l.chunks[b].0), whole(&l.dots)]);
    }
    if let Some(f) = finish {
        let [dummy, rest @ ..] = finish_bindings(plan, op, f);
        if t.cols.is_none() {
            all.push(dummy);
        }
        all.extend(rest);
    }
    let bg = k.bind_ranges(gpu, &all)?;
    let groups = cfg.groups.min(ntiles.max(nlong)).max(1);
    batch.dispatch(&k, bg, [groups, 1, 1])
}
