//! The four kernels of the sliced-ELL path (`spdnn.sliced`, `spdnn.select`, `spdnn.reset`,
//! `spdnn.rejoin`): their bindings, and their specialisation for a plan.

use std::sync::Arc;

use crate::gpu::{Binding, ExclusiveScan, Gpu, Kernel, KernelSpec};
use crate::spdnn::Options;
use crate::Result;

use super::{Tiling, SMALL_WG};

const SLICED_BINDINGS: [Binding; 15] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const SELECT_BINDINGS: [Binding; 13] = [
    Binding::Uniform,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::Read,
];
const RESET_BINDINGS: [Binding; 6] = [
    Binding::Uniform,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const REJOIN_BINDINGS: [Binding; 6] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];

/// The kernels `[sliced, select, rejoin, reset]` for `tiling`, with packed positions when
/// `packed` and scalar rows when `scalar_rows` (constant rows and scalar rows on).
pub(super) fn build(
    gpu: &Gpu,
    tiling: &Tiling,
    options: &Options,
    (packed, scalar_rows): (bool, bool),
) -> Result<[Arc<Kernel>; 4]> {
    let kernel = |name, bindings, constants| {
        gpu.kernel(&KernelSpec {
            name,
            defines: vec![],
            constants,
            bindings,
        })
    };
    let sliced = kernel(
        "spdnn/sliced",
        &SLICED_BINDINGS[..],
        vec![
            ("WG", f64::from(tiling.wg)),
            ("T", f64::from(tiling.t)),
            ("RV", f64::from(tiling.rv)),
            ("S", f64::from(tiling.slice)),
            ("STAGE_LEN", f64::from((tiling.slice + 1) * tiling.rv)),
            ("PACKED", if packed { 1.0 } else { 0.0 }),
            ("G", f64::from(tiling.lanes)),
            (
                "CONSTANT_ROWS",
                if options.constant_rows { 1.0 } else { 0.0 },
            ),
            ("SCALAR_ROWS", if scalar_rows { 1.0 } else { 0.0 }),
            ("SLICE_SUMS", if options.slice_sums { 1.0 } else { 0.0 }),
            (
                "SEGMENTS_TOGETHER",
                if options.segments_together { 1.0 } else { 0.0 },
            ),
            (
                "PREFETCH_BOUNDS",
                if options.segments_together && options.prefetch_bounds {
                    1.0
                } else {
                    0.0
                },
            ),
            ("STAGE_UNROLL", f64::from(tiling.unroll)),
        ],
    )?;
    let select = kernel(
        "spdnn/select",
        &SELECT_BINDINGS[..],
        vec![
            ("WG", f64::from(SMALL_WG)),
            ("SCALAR_ROWS", if scalar_rows { 1.0 } else { 0.0 }),
            ("SCAN_BLOCK", ExclusiveScan::BLOCK as f64),
        ],
    )?;
    let rejoin = kernel(
        "spdnn/rejoin",
        &REJOIN_BINDINGS[..],
        vec![("WG", f64::from(SMALL_WG))],
    )?;
    let reset = gpu.kernel(&KernelSpec {
        name: "spdnn/reset",
        defines: vec!["CONSTANT_ROWS"],
        constants: vec![("WG", f64::from(SMALL_WG))],
        bindings: &RESET_BINDINGS[..],
    })?;
    Ok([sliced, select, rejoin, reset])
}
