//! The workgroup memory a kernel's entry point declares, counted from its naga module with the
//! override constants it is created with.
//!
//! wgpu does not check a pipeline's workgroup memory against
//! `max_compute_workgroup_storage_size`, and a driver given more than its limit may fail in
//! any way: on an H200 a `fused.sorted` plan at 1,024 invocations declared 49,156 bytes (its
//! 48 KiB of tile and w copy plus the 4-byte finishing flag) against 49,152 and its dispatch
//! never finished. [`Gpu::kernel`](crate::Gpu::kernel) refuses such a kernel with an error
//! naming it instead.

use naga::{AddressSpace, ArraySize, Expression, Literal, Module, TypeInner};

use crate::{Error, Result};

/// Bytes of workgroup memory the module's first entry point uses: every workgroup variable it
/// reaches (directly or through the functions it calls), each placed at its alignment, arrays
/// sized by an override taking `constants`' value (else the override's default).
pub fn workgroup_bytes(kernel: &str, module: &Module, constants: &[(&str, f64)]) -> Result<u64> {
    let err = |msg: String| Error::Shader {
        kernel: kernel.to_string(),
        message: msg,
    };
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(module)
    .map_err(|e| err(format!("{e:?}")))?;
    if module.entry_points.is_empty() {
        return Ok(0);
    }
    let uses = info.get_entry_point(0);
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| err(format!("type layout: {e:?}")))?;
    let override_value = |h: naga::Handle<naga::Override>| -> Result<u64> {
        let o = &module.overrides[h];
        let name = o.name.as_deref().unwrap_or("");
        if let Some(&(_, v)) = constants.iter().find(|(k, _)| *k == name) {
            return Ok(v as u64);
        }
        let lit = o.init.map(|e| &module.global_expressions[e]);
        match lit {
            Some(Expression::Literal(Literal::U32(v))) => Ok(*v as u64),
            Some(Expression::Literal(Literal::I32(v))) => Ok((*v).max(0) as u64),
            Some(Expression::Literal(Literal::AbstractInt(v))) => Ok((*v).max(0) as u64),
            _ => Err(err(format!(
                "override {name} sizes a workgroup array: give it a value or a literal default"
            ))),
        }
    };
    let mut total = 0u64;
    for (h, var) in module.global_variables.iter() {
        if var.space != AddressSpace::WorkGroup || uses[h].is_empty() {
            continue;
        }
        let layout = layouter[var.ty];
        let size = match module.types[var.ty].inner {
            TypeInner::Array {
                stride,
                size: ArraySize::Pending(o),
                ..
            } => stride as u64 * override_value(o)?,
            _ => layout.size as u64,
        };
        total = layout.alignment.round_up(total as u32) as u64 + size;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(src: &str, constants: &[(&str, f64)]) -> u64 {
        let m = naga::front::wgsl::parse_str(src).unwrap();
        workgroup_bytes("test", &m, constants).unwrap()
    }

    const SRC: &str = "
        override N: u32 = 16u;
        var<workgroup> a: array<f32, N>;
        var<workgroup> flag: u32;
        var<workgroup> unused: array<f32, 1024>;
        var<workgroup> v: vec4<f32>;
        fn touch() { flag = 1u; }
        @compute @workgroup_size(1)
        fn main() {
            a[0] = 1.0;
            touch();
            v = vec4<f32>(a[0]);
        }";

    #[test]
    fn counts_what_the_entry_point_reaches_with_overrides_and_alignment() {
        // a: 4·16, flag: 4 (at 64), v: 16 aligned to 16 (at 80); `unused` is not counted.
        assert_eq!(bytes(SRC, &[]), 96);
        // a: 4·1,000 = 4,000, flag at 4,000, v at 4,016.
        assert_eq!(bytes(SRC, &[("N", 1000.0)]), 4032);
    }
}
