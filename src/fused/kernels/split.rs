//! Recording the column-split sequence ([`crate::fused::split`]): `fused.split_dots` (the row
//! scales p and w = β·z), then `fused.split` (w += Xᵀp over the column-split chunks).

use super::{defines, whole};
use crate::fused::{DeviceX, Op, Plan, SPLIT_EPL};
use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use crate::{Error, Result};

use Binding::{Read, ReadWrite, Uniform};

const DOTS_BINDINGS: [Binding; 9] = [
    Uniform, Read, Read, Read, Read, Read, Read, ReadWrite, ReadWrite,
];
const SPLIT_BINDINGS: [Binding; 6] = [Uniform, Read, Read, Read, Read, ReadWrite];

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DotsParams {
    m: u32,
    n: u32,
    c: u32,
    flags: u32,
    alpha: f32,
    beta: f32,
    pad: [u32; 2],
}

/// Records both passes of a `Split` plan, writing every element of w.
pub(super) fn split(plan: &Plan, batch: &mut Batch, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let sx = plan.split.as_ref().expect("column-split layout");
    let p = plan.scratch.as_ref().expect("split row scales");
    let DeviceX::Sparse {
        col_idx,
        values,
        bands,
    } = &*plan.x
    else {
        unreachable!("split plans are sparse");
    };
    // The configuration keeps X's entries within one binding: one band.
    let [band] = &bands[..] else {
        return Err(Error::Unsupported(format!(
            "the column-split variant on X in {} row bands",
            bands.len()
        )));
    };
    let mut defs: Vec<&str> = defines(cfg, op.xty, false, false)
        .into_iter()
        .filter(|&d| d != "F32_ATOMIC")
        .collect();
    if sx.col16.is_some() {
        defs.push("COL16");
    }
    let dots = gpu.kernel(&KernelSpec {
        name: "fused/split_dots",
        defines: defs.clone(),
        constants: vec![("WG", cfg.workgroup as f64), ("VS", cfg.vs as f64)],
        bindings: &DOTS_BINDINGS,
    })?;
    let has_z = op.beta != 0.0 && op.z.is_some();
    let params = gpu.uniform(
        "fused.split_dots.params",
        &DotsParams {
            m: plan.m as u32,
            n: plan.n as u32,
            c: cfg.rows_per_vector,
            flags: op.v.is_some() as u32 | (has_z as u32) << 1,
            alpha: op.alpha,
            beta: op.beta,
            pad: [0; 2],
        },
    );
    let dummy = &*plan.dummy;
    let bg = dots.bind_ranges(
        gpu,
        &[
            params.as_entire_buffer_binding(),
            band.row_ptr.raw().as_entire_buffer_binding(),
            whole(sx.col16.as_ref().unwrap_or(col_idx)),
            whole(values),
            whole(op.y),
            whole(op.v.unwrap_or(dummy)),
            whole(op.z.filter(|_| has_z).unwrap_or(dummy)),
            whole(p),
            whole(w),
        ],
    )?;
    batch.dispatch(&dots, bg, [cfg.groups, 1, 1])?;

    defs = vec![];
    if cfg.native_atomics {
        defs.push("F32_ATOMIC");
    }
    if cfg.segmented {
        defs.push("SEGMENTED");
    }
    if cfg.key16 {
        defs.push("KEY16");
    }
    let scatter = gpu.kernel(&KernelSpec {
        name: "fused/split",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("EPL", SPLIT_EPL as f64),
            ("ROW_BITS", sx.row_bits as f64),
        ],
        bindings: &SPLIT_BINDINGS,
    })?;
    let params = gpu.uniform("fused.split.params", &[sx.nchunks, 0, 0, 0]);
    let bg = scatter.bind_ranges(
        gpu,
        &[
            params.as_entire_buffer_binding(),
            whole(&sx.chunks),
            whole(&sx.keys),
            whole(&sx.values),
            whole(p),
            whole(w),
        ],
    )?;
    batch.dispatch(&scatter, bg, [sx.groups, 1, 1])
}
