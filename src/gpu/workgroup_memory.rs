//! The workgroup memory a kernel's entry point declares, counted from its naga module with the
//! override constants it is created with.
//!
//! wgpu does not check a pipeline's workgroup memory against
//! `max_compute_workgroup_storage_size` (gfx-rs/wgpu#8946), and a driver given more than its limit may fail in
//! any way: on an H200 a `fused.sorted` plan at 1,024 invocations declared 49,156 bytes (its
//! 48 KiB of tile and w copy plus the 4-byte finishing flag) against 49,152 and its dispatch
//! never finished. [`Gpu::kernel`](crate::Gpu::kernel) refuses such a kernel with an error
//! naming it instead.

use naga::{
    AddressSpace, ArraySize, BinaryOperator, Expression, Handle, Literal, Module, TypeInner,
};

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
    let eval = |h: Handle<naga::Override>| override_value(module, constants, h, 0);
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
            } => stride as u64 * eval(o).map_err(err)?,
            _ => layout.size as u64,
        };
        total = layout.alignment.round_up(total as u32) as u64 + size;
    }
    Ok(total)
}

/// An override's value: the caller's constant, else its default expression (literals, other
/// overrides and constants under + − × ÷ %), as the pipeline would take it.
fn override_value(
    module: &Module,
    constants: &[(&str, f64)],
    h: Handle<naga::Override>,
    depth: u32,
) -> std::result::Result<u64, String> {
    let o = &module.overrides[h];
    let name = o.name.as_deref();
    if let Some(&(_, v)) = name.and_then(|n| constants.iter().find(|(k, _)| *k == n)) {
        return Ok(v as u64);
    }
    match o.init {
        Some(e) => expr_value(module, constants, e, depth + 1),
        None => Err(format!(
            "override {} sizes a workgroup array without a value",
            name.unwrap_or("(unnamed)")
        )),
    }
}

fn expr_value(
    module: &Module,
    constants: &[(&str, f64)],
    e: Handle<Expression>,
    depth: u32,
) -> std::result::Result<u64, String> {
    if depth > 64 {
        return Err("an override expression nested too deep".into());
    }
    let val = |e| expr_value(module, constants, e, depth + 1);
    match module.global_expressions[e] {
        Expression::Literal(Literal::U32(v)) => Ok(v as u64),
        Expression::Literal(Literal::I32(v)) => Ok(v.max(0) as u64),
        Expression::Literal(Literal::AbstractInt(v)) => Ok(v.max(0) as u64),
        Expression::Override(o) => override_value(module, constants, o, depth + 1),
        Expression::Constant(c) => val(module.constants[c].init),
        Expression::Binary { op, left, right } => {
            let (a, b) = (val(left)?, val(right)?);
            match op {
                BinaryOperator::Add => Ok(a + b),
                BinaryOperator::Subtract => Ok(a.saturating_sub(b)),
                BinaryOperator::Multiply => Ok(a * b),
                BinaryOperator::Divide if b > 0 => Ok(a / b),
                BinaryOperator::Modulo if b > 0 => Ok(a % b),
                _ => Err(format!("override expression with {op:?}")),
            }
        }
        ref other => Err(format!(
            "override expression {other:?} sizing a workgroup array"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(src: &str, constants: &[(&str, f64)]) -> u64 {
        let m = naga::front::wgsl::parse_str(src).unwrap();
        workgroup_bytes("test", &m, constants).unwrap()
    }

    const SRC: &str = "
        override M: u32 = 4u;
        override N: u32 = M * 4u;
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
        // N from M: 4·(3·4) = 48, flag at 48, v at 64.
        assert_eq!(bytes(SRC, &[("M", 3.0)]), 80);
    }
}
