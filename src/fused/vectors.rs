//! Recording the element-wise kernels over vectors: `fused.axpy`, `fused.scale`,
//! `fused.permute`, `fused.dot` and `fused.reduce_parts`.

use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use crate::Result;

use Binding::{Read, ReadWrite, Uniform};

pub(crate) const VECTOR3_BINDINGS: [Binding; 4] = [Uniform, Read, Read, ReadWrite];
const SCALE_BINDINGS: [Binding; 3] = [Uniform, Read, ReadWrite];

/// Workgroup size of the element-wise kernels.
pub(crate) const VECTOR_WG: u32 = 256;

pub(crate) fn elementwise_groups(n: usize) -> u32 {
    (n.div_ceil(VECTOR_WG as usize) as u32).clamp(1, 65_535)
}

/// Records an element-wise kernel over n (`fused.axpy`, `fused.scale`, `fused.reduce_parts`,
/// `fused.dot`) of [`VECTOR_WG`] invocations per workgroup.
fn record_vector<P: bytemuck::Pod>(
    batch: &mut Batch,
    (name, defines, bindings): (&str, Vec<&str>, &[Binding]),
    params: P,
    buffers: &[&wgpu::Buffer],
    groups: u32,
) -> Result<()> {
    let gpu = batch.gpu();
    let k = gpu.kernel(&KernelSpec {
        name,
        defines,
        constants: vec![("WG", VECTOR_WG as f64)],
        bindings,
    })?;
    let params = gpu.uniform(name, &params);
    let mut all = vec![&params];
    all.extend(buffers);
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}

/// Records w = a·x + b·z (`fused.axpy`; a = 0 never reads x, b = 0 never reads z).
#[allow(clippy::too_many_arguments)]
pub(crate) fn axpy(
    batch: &mut Batch,
    n: usize,
    a: f32,
    x: &GpuBuffer<f32>,
    b: f32,
    z: &GpuBuffer<f32>,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    // w = a·w + b·z binds w once (a buffer may not be both read-only and writable).
    let inplace = std::ptr::eq(x, w);
    let x = if inplace { z } else { x };
    record_vector(
        batch,
        (
            "fused/axpy",
            if inplace { vec!["INPLACE"] } else { vec![] },
            &VECTOR3_BINDINGS,
        ),
        [n as u32, a.to_bits(), b.to_bits(), 0],
        &[x.raw(), z.raw(), w.raw()],
        elementwise_groups(n),
    )
}

const DEVICE_COEF_BINDINGS: [Binding; 5] = [Uniform, Read, Read, ReadWrite, Read];

/// A scalar factor of [`axpy_dev`]: none (1) or `coef[i]`.
pub(crate) const NO_COEF: u32 = u32::MAX;

/// Records w = (a·coef[ia])·w + (b·coef[ib])·z in place (`fused.axpy` with DEVICE_COEF): the
/// factors are scalars a solver computed on the device ([`NO_COEF`]: 1). A zero coefficient
/// never reads its vector.
#[allow(clippy::too_many_arguments)]
pub(crate) fn axpy_dev(
    batch: &mut Batch,
    n: usize,
    (a, ia): (f32, u32),
    (b, ib): (f32, u32),
    z: &GpuBuffer<f32>,
    w: &GpuBuffer<f32>,
    coef: &GpuBuffer<f32>,
) -> Result<()> {
    record_vector(
        batch,
        (
            "fused/axpy",
            vec!["INPLACE", "DEVICE_COEF"],
            &DEVICE_COEF_BINDINGS,
        ),
        [n as u32, a.to_bits(), b.to_bits(), ia, ib, 0, 0, 0],
        &[z.raw(), z.raw(), w.raw(), coef.raw()],
        elementwise_groups(n),
    )
}

/// Workgroups of `fused.dot` (its partials buffer holds this many).
pub(crate) const DOT_GROUPS: u32 = 64;

/// Records out[slot] = a·b (`fused.dot` partials into `part`, then `fused.reduce_parts`).
pub(crate) fn dot(
    batch: &mut Batch,
    a: &GpuBuffer<f32>,
    b: &GpuBuffer<f32>,
    part: &GpuBuffer<f32>,
    out: &GpuBuffer<f32>,
    slot: u32,
) -> Result<()> {
    record_vector(
        batch,
        ("fused/dot", vec![], &VECTOR3_BINDINGS),
        [a.len() as u32, 0, 0, 0],
        &[a.raw(), b.raw(), part.raw()],
        DOT_GROUPS,
    )?;
    reduce_parts(batch, 1, DOT_GROUPS, part, 0.0, part, out, slot)
}

/// Records `fused.scale`: p ⊙= v.
pub(crate) fn scale(
    batch: &mut Batch,
    n: usize,
    v: &GpuBuffer<f32>,
    p: &GpuBuffer<f32>,
) -> Result<()> {
    record_vector(
        batch,
        ("fused/scale", vec![], &SCALE_BINDINGS),
        [n as u32, 0, 0, 0],
        &[v.raw(), p.raw()],
        elementwise_groups(n),
    )
}

/// Records `fused.reduce_parts`: w[out_base + ·] = β·z + Σ_g part[g·n + ·] in group order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_parts(
    batch: &mut Batch,
    n: usize,
    groups: u32,
    part: &GpuBuffer<f32>,
    beta: f32,
    z: &GpuBuffer<f32>,
    w: &GpuBuffer<f32>,
    out_base: u32,
) -> Result<()> {
    record_vector(
        batch,
        ("fused/reduce_parts", vec![], &VECTOR3_BINDINGS),
        [n as u32, groups, beta.to_bits(), out_base],
        &[part.raw(), z.raw(), w.raw()],
        elementwise_groups(n),
    )
}

/// Records `fused.permute` over n elements with `perm` mapping the plan's column order to the
/// caller's (new → old): `gather` dst[i] = src[perm[i]], else dst[perm[i]] = src[i].
pub(crate) fn permute(
    batch: &mut Batch,
    n: usize,
    perm: &GpuBuffer<u32>,
    (src, dst): (&GpuBuffer<f32>, &GpuBuffer<f32>),
    gather: bool,
) -> Result<()> {
    record_vector(
        batch,
        (
            "fused/permute",
            if gather { vec!["GATHER"] } else { vec![] },
            &VECTOR3_BINDINGS,
        ),
        [n as u32, 0, 0, 0],
        &[perm.raw(), src.raw(), dst.raw()],
        elementwise_groups(n),
    )
}
