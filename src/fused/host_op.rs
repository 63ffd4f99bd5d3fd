//! A [`HostOp`]'s vectors on the device ([`DeviceOp`]): what [`Plan::run_host`] and the
//! callers that record runs of host vectors themselves upload.

use super::{HostOp, Op};
use crate::gpu::{Gpu, GpuBuffer};
use crate::Result;

/// The device copies of a [`HostOp`]'s vectors and a NaN-poisoned w.
pub struct DeviceOp {
    alpha: f32,
    beta: f32,
    xty: bool,
    y: GpuBuffer<f32>,
    v: Option<GpuBuffer<f32>>,
    z: Option<GpuBuffer<f32>>,
    /// The output, n elements, NaN until a run writes it.
    pub w: GpuBuffer<f32>,
}

impl HostOp<'_> {
    /// Uploads y, v and z, and a w of `n` NaN.
    pub fn upload(&self, gpu: &Gpu, n: usize) -> Result<DeviceOp> {
        let up = |name, v: Option<&[f32]>| v.map(|v| GpuBuffer::upload(gpu, name, v)).transpose();
        Ok(DeviceOp {
            alpha: self.alpha,
            beta: self.beta,
            xty: self.xty,
            y: GpuBuffer::upload(gpu, "fused.y", self.y)?,
            v: up("fused.v", self.v)?,
            z: up("fused.z", self.z)?,
            w: GpuBuffer::filled(gpu, "fused.w", n, f32::NAN)?,
        })
    }
}

impl DeviceOp {
    /// The operands of a run on these vectors.
    pub fn op(&self) -> Op<'_> {
        Op {
            alpha: self.alpha,
            y: &self.y,
            v: self.v.as_ref(),
            beta: self.beta,
            z: self.z.as_ref(),
            xty: self.xty,
        }
    }
}
