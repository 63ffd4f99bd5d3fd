//! Dense X stored unpadded: the device copy of an m × n X holds exactly m·n floats (n = 28, the
//! HIGGS width, included), every pattern × variant on it equals the f64 twin, and with storage
//! bindings capped the row bands of odd widths (n = 7, 28, 29: rows not a power of two in
//! bytes) start at multiples of the storage-offset alignment and still equal the twin.

mod common;

use common::fused::{check, opts};
use wgsparse::fused::{Matrix, Options, Pattern, Plan, Variant};
use wgsparse::gpu::GpuOptions;
use wgsparse::{gen, Error, Gpu};

/// Rows in flight the dense kernel takes.
const RIF: [u32; 3] = [1, 2, 4];

#[test]
fn dense_x_holds_exactly_m_times_n_floats() {
    for (m, n) in [(500, 28), (97, 29), (300, 7), (40, 1)] {
        let x = gen::dense_uniform(m, n, 41);
        for gpu in [common::gpu(), common::gpu_plain()] {
            for p in Pattern::ALL {
                for v in Variant::CONCRETE {
                    for r in RIF {
                        let o = Options {
                            rows_in_flight: Some(r),
                            ..opts(v)
                        };
                        let (_, plan) = check(gpu, Matrix::Dense(&x), &o, p, 42);
                        assert_eq!(
                            plan.dense_x_layout(),
                            Some((n, m * n)),
                            "{m} × {n}, {}",
                            plan.config.describe()
                        );
                    }
                }
            }
        }
    }
}

/// Checks `plan`'s bands of an m × n X against `gpu`'s limits: contiguous from row 0 to m,
/// each within one binding and starting at a multiple of the storage-offset alignment.
fn assert_aligned_bands(gpu: &Gpu, plan: &Plan, m: usize, n: usize) {
    let align = gpu.caps.storage_offset_alignment.max(4) as usize;
    let binding = gpu.caps.max_storage_binding_bytes as usize;
    let bands = plan.band_rows();
    assert!(bands.len() > 1, "n = {n}: {bands:?}");
    let mut next = 0;
    for b in &bands {
        assert_eq!(b.start, next, "n = {n}: {bands:?}");
        assert_eq!(b.start * n * 4 % align, 0, "n = {n}, align {align}: {b:?}");
        assert!(b.len() * n * 4 <= binding, "n = {n}: {b:?}");
        next = b.end;
    }
    assert_eq!(next, m);
}

#[test]
fn odd_widths_band_at_aligned_rows() {
    // 8 KiB bindings: each X spans at least 3 of them.
    let gpu = common::gpu_small_bindings();
    for (m, n) in [(1_000, 7), (300, 28), (300, 29)] {
        let x = gen::dense_uniform(m, n, 43);
        for v in Variant::CONCRETE {
            for p in [Pattern::Full, Pattern::Xty] {
                for r in RIF {
                    // Many rows per vector keep the two-pass partials within one binding.
                    let o = Options {
                        variant: v,
                        rows_per_vector: Some(40),
                        rows_in_flight: Some(r),
                        ..Default::default()
                    };
                    let (_, plan) = check(gpu, Matrix::Dense(&x), &o, p, 44);
                    assert_aligned_bands(gpu, &plan, m, n);
                    assert_eq!(plan.dense_x_layout(), Some((n, m * n)));
                }
            }
        }
    }
}

#[test]
fn aligned_rows_beyond_one_binding_are_a_clear_error() {
    // 256-byte bindings (the least the adapter is capped to) hold 2 rows of 29 floats (116
    // bytes), but aligned band starts step by align / 4 rows (align ≥ 16: at least 4 rows,
    // 464 bytes).
    let gpu = Gpu::new_with(&GpuOptions {
        max_binding_bytes: Some(256),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(gpu.caps.storage_offset_alignment >= 16);
    let x = gen::dense_uniform(10, 29, 45);
    match Plan::new(&gpu, Matrix::Dense(&x), &opts(Variant::Fused)) {
        Err(Error::TooLarge { what, .. }) => {
            assert!(what.contains("rows of dense X (n = 29"), "{what}")
        }
        Err(e) => panic!("expected TooLarge, got {e}"),
        Ok(_) => panic!("expected TooLarge, got a plan"),
    }
}
