//! Native f32 adds into a workgroup array, by a rewrite of naga's SPIR-V.
//!
//! naga accepts `atomic<f32>` only in storage buffers, so a kernel built with the
//! `WG_F32_NATIVE` define (`shared/atomic_f32_wg`) declares
//! `var<workgroup> wg_accum: array<atomic<u32>, N>` and adds with
//! `atomicAdd(&wg_accum[i], bitcast<u32>(v))`: an integer add in naga's eyes. The rewrite
//! retypes `wg_accum` as an array of `f32` and turns its atomics into float ones:
//! - `OpAtomicIAdd` becomes `OpAtomicFAddEXT` on the value's bits read as a float (and the
//!   old value's bits read back as an integer for any user of the result);
//! - `OpAtomicLoad` and `OpAtomicStore` keep their integer view by bitcasts around them.
//!
//! Any other use of the array (a compare-exchange, a plain load) is refused, so a shader
//! that would mix integer and float views of the words never reaches the driver. The module
//! then needs `AtomicFloat32AddEXT` (`SPV_EXT_shader_atomic_float_add`) and a device with
//! `shaderSharedFloat32AtomicAdd` ([`crate::gpu::Caps::wg_f32_atomics`]).

use std::collections::HashSet;

use rspirv::binary::Assemble;
use rspirv::dr::{self, Instruction, Operand};
use rspirv::spirv::{Capability, Decoration, Op, StorageClass, Word};

use crate::{Error, Result};

/// The workgroup array the rewrite retypes (`shared/atomic_f32_wg`'s contract).
pub(crate) const WG_ACCUM: &str = "wg_accum";

const EXTENSION: &str = "SPV_EXT_shader_atomic_float_add";

/// The define that selects native adds in `shared/atomic_f32_wg`; a kernel built with it is
/// compiled by [`compile`] and passed through to the driver.
pub const DEFINE: &str = "WG_F32_NATIVE";

/// SPIR-V for `module` (validated: `info`) with its overrides set to `constants` and the
/// adds into [`WG_ACCUM`] made native: what a kernel built with [`DEFINE`] runs. The writer's
/// settings follow wgpu's own: no bounds checks for a trusted module (`checked`: naga's
/// clamping, as `WGSPARSE_CHECKED=1` asks), no zeroing of workgroup memory, SPIR-V 1.3
/// (subgroup operations; Vulkan 1.1).
pub(crate) fn compile(
    label: &str,
    (module, info): (&naga::Module, &naga::valid::ModuleInfo),
    constants: &[(&str, f64)],
    checked: bool,
) -> Result<Vec<u32>> {
    let err = |message: String| Error::Shader {
        kernel: label.to_string(),
        message,
    };
    let mut values = naga::back::PipelineConstants::default();
    for (name, value) in constants {
        values.insert(name.to_string(), *value);
    }
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        module,
        info,
        Some((naga::ShaderStage::Compute, "main")),
        &values,
    )
    .map_err(|e| err(format!("overrides: {e}")))?;
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        flags: naga::back::spv::WriterFlags::DEBUG,
        // Bindings as declared (group = descriptor set, binding = binding).
        fake_missing_bindings: true,
        bounds_check_policies: if checked {
            let restrict = naga::proc::BoundsCheckPolicy::Restrict;
            naga::proc::BoundsCheckPolicies {
                index: restrict,
                buffer: restrict,
                image_load: restrict,
                binding_array: restrict,
            }
        } else {
            naga::proc::BoundsCheckPolicies::default()
        },
        zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: false,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| err(format!("SPIR-V: {e}")))?;
    // No adds at all is valid: a timing-only build that skips them (fused/diag).
    native_wg_adds(&words, WG_ACCUM).map_err(err)
}

/// Rewrites `words` (naga's SPIR-V, written with debug names) so that the workgroup array
/// named `array` takes native f32 adds.
pub(crate) fn native_wg_adds(words: &[u32], array: &str) -> Result<Vec<u32>, String> {
    let mut m = dr::load_words(words).map_err(|e| format!("SPIR-V not readable: {e}"))?;
    let var = m
        .debug_names
        .iter()
        .find(|i| i.operands.get(1).map(|o| o == &Operand::from(array)) == Some(true))
        .map(|i| i.operands[0].unwrap_id_ref())
        .ok_or_else(|| format!("no variable named {array} (debug names off?)"))?;
    let mut next_id = m.header.as_ref().map_or(0, |h| h.bound);
    let mut fresh = || {
        next_id += 1;
        next_id - 1
    };
    let globals = &mut m.types_global_values;
    let def =
        |globals: &[Instruction], id: Word| globals.iter().position(|i| i.result_id == Some(id));
    let var_at = def(globals, var).ok_or("the array's variable is not global")?;
    let var_inst = globals[var_at].clone();
    if var_inst.class.opcode != Op::Variable
        || var_inst.operands.first() != Some(&Operand::StorageClass(StorageClass::Workgroup))
        || var_inst.operands.len() != 1
    {
        return Err(format!(
            "{array} is not an uninitialised workgroup variable"
        ));
    }
    let ptr_array_u = var_inst.result_type.ok_or("variable without a type")?;
    let array_u = pointee(globals, ptr_array_u)?;
    let array_def = &globals[def(globals, array_u).ok_or("array type not found")?];
    if array_def.class.opcode != Op::TypeArray {
        return Err(format!("{array} is not an array"));
    }
    let (elem_u, len) = (
        array_def.operands[0].unwrap_id_ref(),
        array_def.operands[1].unwrap_id_ref(),
    );
    let elem_def = &globals[def(globals, elem_u).ok_or("element type not found")?];
    if elem_def.class.opcode != Op::TypeInt || elem_def.operands[0] != Operand::LiteralBit32(32) {
        return Err(format!("{array}'s elements are not 32-bit integers"));
    }
    // The variable moves to the end of the globals, after the types it now needs.
    globals.remove(var_at);
    let mut added = vec![];
    let float = match globals.iter().find(|i| {
        i.class.opcode == Op::TypeFloat && i.operands.first() == Some(&Operand::LiteralBit32(32))
    }) {
        Some(i) => i.result_id.expect("type id"),
        None => {
            let id = fresh();
            added.push(Instruction::new(
                Op::TypeFloat,
                None,
                Some(id),
                vec![Operand::LiteralBit32(32)],
            ));
            id
        }
    };
    let pointer_to = |globals: &[Instruction], target: Word| {
        globals.iter().find_map(|i| {
            (i.class.opcode == Op::TypePointer
                && i.operands
                    == [
                        Operand::StorageClass(StorageClass::Workgroup),
                        Operand::IdRef(target),
                    ])
            .then_some(i.result_id.expect("type id"))
        })
    };
    let ptr_elem_u = pointer_to(globals, elem_u);
    let ptr_elem_f = match pointer_to(globals, float) {
        Some(id) => id,
        None => {
            let id = fresh();
            added.push(workgroup_pointer(id, float));
            id
        }
    };
    let (array_f, ptr_array_f) = (fresh(), fresh());
    added.push(Instruction::new(
        Op::TypeArray,
        None,
        Some(array_f),
        vec![Operand::IdRef(float), Operand::IdRef(len)],
    ));
    added.push(workgroup_pointer(ptr_array_f, array_f));
    let mut var_f = var_inst;
    var_f.result_type = Some(ptr_array_f);
    added.push(var_f);
    globals.extend(added);
    let strides: Vec<Instruction> = m
        .annotations
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Decorate
                && i.operands.first() == Some(&Operand::IdRef(array_u))
                && i.operands.get(1) == Some(&Operand::Decoration(Decoration::ArrayStride))
        })
        .map(|i| {
            let mut d = i.clone();
            d.operands[0] = Operand::IdRef(array_f);
            d
        })
        .collect();
    m.annotations.extend(strides);

    let mut pointers: HashSet<Word> = HashSet::from([var]);
    for block in m.functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        let mut out = Vec::with_capacity(block.instructions.len());
        for mut i in block.instructions.drain(..) {
            let op = i.class.opcode;
            let uses = |i: &Instruction, at: usize| {
                i.operands
                    .get(at)
                    .and_then(Operand::id_ref_any)
                    .is_some_and(|id| pointers.contains(&id))
            };
            match op {
                Op::AccessChain | Op::InBoundsAccessChain if uses(&i, 0) => {
                    if i.operands.len() != 2 || ptr_elem_u.is_none() || i.result_type != ptr_elem_u
                    {
                        return Err(format!("{array}: an access other than one element"));
                    }
                    i.result_type = Some(ptr_elem_f);
                    pointers.insert(i.result_id.expect("access chain id"));
                    out.push(i);
                }
                Op::AtomicIAdd if uses(&i, 0) => {
                    let (old_u, value_u) = (i.result_id, i.operands[3].unwrap_id_ref());
                    let (value_f, old_f) = (fresh(), fresh());
                    out.push(bitcast(float, value_f, value_u));
                    let mut add = Instruction::new(
                        Op::AtomicFAddEXT,
                        Some(float),
                        Some(old_f),
                        i.operands.clone(),
                    );
                    add.operands[3] = Operand::IdRef(value_f);
                    out.push(add);
                    out.push(bitcast(elem_u, old_u.expect("add id"), old_f));
                }
                Op::AtomicLoad if uses(&i, 0) => {
                    let (old_u, old_f) = (i.result_id.expect("load id"), fresh());
                    i.result_type = Some(float);
                    i.result_id = Some(old_f);
                    out.push(i);
                    out.push(bitcast(elem_u, old_u, old_f));
                }
                Op::AtomicStore if uses(&i, 0) => {
                    let value_f = fresh();
                    out.push(bitcast(float, value_f, i.operands[3].unwrap_id_ref()));
                    i.operands[3] = Operand::IdRef(value_f);
                    out.push(i);
                }
                _ if (0..i.operands.len()).any(|at| uses(&i, at)) => {
                    return Err(format!(
                        "{array}: {op:?} is not rewritten (adds, loads, stores)"
                    ));
                }
                _ => out.push(i),
            }
        }
        block.instructions = out;
    }
    let cap = Operand::Capability(Capability::AtomicFloat32AddEXT);
    if !m
        .capabilities
        .iter()
        .any(|i| i.operands.first() == Some(&cap))
    {
        m.capabilities
            .push(Instruction::new(Op::Capability, None, None, vec![cap]));
    }
    if !m
        .extensions
        .iter()
        .any(|i| i.operands.first() == Some(&Operand::from(EXTENSION)))
    {
        m.extensions.push(Instruction::new(
            Op::Extension,
            None,
            None,
            vec![Operand::from(EXTENSION)],
        ));
    }
    if let Some(h) = m.header.as_mut() {
        h.bound = next_id;
    }
    Ok(m.assemble())
}

/// The type a workgroup pointer type `ptr` points to.
fn pointee(globals: &[Instruction], ptr: Word) -> Result<Word, String> {
    globals
        .iter()
        .find(|i| i.result_id == Some(ptr) && i.class.opcode == Op::TypePointer)
        .map(|i| i.operands[1].unwrap_id_ref())
        .ok_or_else(|| "pointer type not found".into())
}

fn workgroup_pointer(id: Word, target: Word) -> Instruction {
    Instruction::new(
        Op::TypePointer,
        None,
        Some(id),
        vec![
            Operand::StorageClass(StorageClass::Workgroup),
            Operand::IdRef(target),
        ],
    )
}

fn bitcast(to: Word, id: Word, from: Word) -> Instruction {
    Instruction::new(Op::Bitcast, Some(to), Some(id), vec![Operand::IdRef(from)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::preprocess;

    const CONSTANTS: [(&str, f64); 2] = [("WG", 64.0), ("BINS", 5.0)];

    fn module(defines: &[&str]) -> (naga::Module, naga::valid::ModuleInfo) {
        let wgsl = preprocess::preprocess_with("selftest/atomic", defines, &[]).unwrap();
        preprocess::validate_with_info("selftest.atomic", &wgsl).unwrap()
    }

    fn opcodes(words: &[u32]) -> Vec<Op> {
        let m = dr::load_words(words).unwrap();
        m.functions
            .iter()
            .flat_map(|f| f.blocks.iter())
            .flat_map(|b| b.instructions.iter())
            .map(|i| i.class.opcode)
            .collect()
    }

    #[test]
    fn the_integer_adds_become_float_adds() {
        let (module, info) = module(&[DEFINE]);
        let words = compile("selftest.atomic", (&module, &info), &CONSTANTS, false).unwrap();
        let ops = opcodes(&words);
        assert_eq!(ops.iter().filter(|&&o| o == Op::AtomicFAddEXT).count(), 1);
        assert!(!ops.contains(&Op::AtomicIAdd), "{ops:?}");
        let m = dr::load_words(&words).unwrap();
        let cap = Operand::Capability(Capability::AtomicFloat32AddEXT);
        assert!(m.capabilities.iter().any(|i| i.operands[0] == cap));
        assert!(m
            .extensions
            .iter()
            .any(|i| i.operands[0] == Operand::from(EXTENSION)));
        // Every id the rewrite made is below the header's bound.
        let bound = m.header.as_ref().unwrap().bound;
        let ids = m
            .all_inst_iter()
            .filter_map(|i| i.result_id)
            .collect::<Vec<_>>();
        assert!(ids.iter().all(|&id| id < bound), "bound {bound}");
    }

    #[test]
    fn other_uses_of_the_array_are_refused() {
        // Without the define the adds are compare-exchange loops on the array.
        let (module, info) = module(&[]);
        let e = compile("selftest.atomic", (&module, &info), &CONSTANTS, true).unwrap_err();
        assert!(e.to_string().contains("AtomicCompareExchange"), "{e}");
        let e = native_wg_adds(&[0x0723_0203, 0x0001_0300, 0, 1, 0], "nothing").unwrap_err();
        assert!(e.contains("no variable named nothing"), "{e}");
    }
}
