//! Helpers of the `fused` tests: the pattern's vectors and host operands, runs checked
//! against the f64 twin, power-law X with hot columns, X of given row lengths.

use wgsparse::fused::{HostOp, Matrix, Op, Options, Pattern, Plan, Variant};
use wgsparse::gen;
use wgsparse::gpu::{Batch, GpuBuffer};
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;
use wgsparse::Gpu;

/// Random vectors for a pattern on an m×n matrix: y, v, z (z holds NaN when β = 0, which
/// must never be read).
pub struct Vectors {
    pub y: Vec<f32>,
    pub v: Vec<f32>,
    pub z: Vec<f32>,
}

pub fn vectors(m: usize, n: usize, xty: bool, seed: u64) -> Vectors {
    let y_len = if xty { m } else { n };
    Vectors {
        y: gen::dense_uniform(1, y_len, seed).data,
        v: gen::dense_uniform(1, m, seed + 1).data,
        z: gen::dense_uniform(1, n, seed + 2).data,
    }
}

pub fn host_op<'a>(p: Pattern, vecs: &'a Vectors, alpha: f32, beta: f32) -> HostOp<'a> {
    HostOp {
        alpha: if p == Pattern::Xty || p == Pattern::Full {
            alpha
        } else {
            1.0
        },
        y: &vecs.y,
        v: p.has_v().then_some(&vecs.v[..]),
        beta: if p.has_z() { beta } else { 0.0 },
        z: p.has_z().then_some(&vecs.z[..]),
        xty: p == Pattern::Xty,
    }
}

/// Runs `x` under `opts` for pattern `p` and checks against the twin; returns w and the plan.
pub fn check_op(gpu: &Gpu, x: Matrix, opts: &Options, op: &HostOp) -> (Vec<f32>, Plan) {
    let plan = Plan::new(gpu, x, opts).unwrap_or_else(|e| panic!("plan {opts:?}: {e}"));
    let got = plan.run_host(gpu, op).unwrap();
    let (want, mag) = x.reference(op);
    let cmp = compare(&got, &want, &mag, x.rounding_terms());
    assert!(
        cmp.ok(),
        "{} on {:?}: w[{:?}] = {} want {} (max rel err {:.3e})",
        plan.config.describe(),
        x.shape(),
        cmp.first_bad,
        cmp.first_bad.map_or(0.0, |e| got[e]),
        cmp.first_bad.map_or(0.0, |e| want[e]),
        cmp.max_rel_error
    );
    (got, plan)
}

pub fn check(gpu: &Gpu, x: Matrix, opts: &Options, p: Pattern, seed: u64) -> (Vec<f32>, Plan) {
    let (m, n) = x.shape();
    let vecs = vectors(m, n, p == Pattern::Xty, seed);
    check_op(gpu, x, opts, &host_op(p, &vecs, -0.75, 1.25))
}

/// Runs a ready plan (a tuner's pick) on the full pattern and checks it against the twin.
pub fn check_plan(gpu: &Gpu, x: Matrix, plan: &Plan, seed: u64) {
    let (m, n) = x.shape();
    let vecs = vectors(m, n, false, seed);
    let op = host_op(Pattern::Full, &vecs, 0.5, -1.5);
    let got = plan.run_host(gpu, &op).unwrap();
    let (want, mag) = x.reference(&op);
    let cmp = compare(&got, &want, &mag, x.rounding_terms());
    assert!(
        cmp.ok(),
        "{}: w[{:?}]",
        plan.config.describe(),
        cmp.first_bad
    );
}

/// Asserts that a plan of `o` on sparse `x` is refused as a bad option naming `says`.
pub fn refused(gpu: &Gpu, x: &Csr, o: &Options, says: &str) {
    match Plan::new(gpu, Matrix::Sparse(x), o) {
        Err(wgsparse::Error::Option(msg)) => assert!(msg.contains(says), "{msg}"),
        other => panic!("{o:?}: {:?}", other.err()),
    }
}

/// Asserts that `wgsparse fused --gen demo --variant stream --no-tune FLAG VALUE` exits
/// non-zero naming `says`.
pub fn stream_cli_refuses(flag: &str, value: &str, says: &str) {
    let (code, _, err) = super::wgsparse_exit(&[
        "fused",
        "--gen",
        "demo",
        "--variant",
        "stream",
        flag,
        value,
        "--no-tune",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains(says), "{err}");
}

pub fn opts(variant: Variant) -> Options {
    Options {
        variant,
        ..Default::default()
    }
}

pub fn sparse_x(m: usize, n: usize, nnz: usize, seed: u64) -> Csr {
    gen::power_law(m, n, nnz, 1.1, seed).unwrap()
}

/// Power-law X with `hot` extra columns present in nearly every row (values random): the
/// columns whose global adds would serialize.
pub fn with_hot_columns(x: &Csr, hot: &[u32], seed: u64) -> Csr {
    let vals = gen::dense_uniform(1, x.nrows * hot.len(), seed).data;
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (vec![], vec![]);
    for r in 0..x.nrows {
        let mut row: Vec<(u32, f32)> = x
            .row_range(r)
            .map(|e| (x.col_idx[e], x.values[e]))
            .collect();
        for (k, &c) in hot.iter().enumerate() {
            // Every row but each 7th (so the hot columns are not uniform either).
            if r % 7 != k && !row.iter().any(|&(rc, _)| rc == c) {
                row.push((c, vals[r * hot.len() + k]));
            }
        }
        row.sort_by_key(|&(c, _)| c);
        col_idx.extend(row.iter().map(|&(c, _)| c));
        values.extend(row.iter().map(|&(_, v)| v));
        row_ptr.push(col_idx.len() as u32);
    }
    Csr {
        nrows: x.nrows,
        ncols: x.ncols,
        row_ptr,
        col_idx,
        values,
    }
}

/// Share of X's entries in its heaviest row and in its heaviest column.
pub fn top_shares(x: &Csr) -> (f64, f64) {
    let nnz = x.nnz() as f64;
    let row = (0..x.nrows)
        .map(|r| x.row_range(r).len())
        .max()
        .unwrap_or(0);
    let col = wgsparse::fused::hot::column_degrees(x)
        .into_iter()
        .max()
        .unwrap_or(0);
    (row as f64 / nnz, col as f64 / nnz)
}

/// Rows of `lens` entries (distinct random columns below n, random values), in turn.
pub fn rows_of(m: usize, n: usize, lens: &[usize], seed: u64) -> Csr {
    let total: usize = (0..m).map(|r| lens[r % lens.len()]).sum();
    let vals = gen::dense_uniform(1, total, seed).data;
    let mut row_ptr = vec![0u32];
    let mut col_idx = vec![];
    for r in 0..m {
        let len = lens[r % lens.len()];
        // A stride coprime to n walks distinct columns from a row-dependent start.
        let stride = [7usize, 11, 13]
            .into_iter()
            .find(|s| !n.is_multiple_of(*s))
            .unwrap();
        let mut cols: Vec<u32> = (0..len)
            .map(|i| ((r * 31 + i * stride) % n) as u32)
            .collect();
        cols.sort_unstable();
        col_idx.extend(cols);
        row_ptr.push(col_idx.len() as u32);
    }
    Csr {
        nrows: m,
        ncols: n,
        row_ptr,
        col_idx,
        values: vals,
    }
}

/// Whether some layout (workgroup size, entries per invocation, key width) among the `timed`
/// options was timed at `grids` grids or more (the tuner's stream grids on one layout).
pub fn timed_at_grids<'a>(timed: impl IntoIterator<Item = &'a Options>, grids: usize) -> bool {
    let mut seen = std::collections::BTreeMap::<_, std::collections::BTreeSet<_>>::new();
    for t in timed {
        seen.entry((t.workgroup, t.epl, t.key16))
            .or_default()
            .insert(t.groups);
    }
    seen.values().any(|g| g.len() >= grids)
}

/// Uploads `op`'s vectors and runs `f` on the device operands and a NaN-poisoned w.
pub fn on_device<R>(
    gpu: &Gpu,
    n: usize,
    op: &HostOp,
    f: impl FnOnce(&Op, &GpuBuffer<f32>) -> R,
) -> R {
    let d = op.upload(gpu, n).unwrap();
    f(&d.op(), &d.w)
}

/// Runs `plan` on `op` into a NaN-poisoned w: (w, dispatches recorded).
pub fn run_counted(gpu: &Gpu, plan: &Plan, op: &HostOp) -> (Vec<f32>, usize) {
    on_device(gpu, plan.n, op, |dop, w| {
        let mut batch = Batch::new(gpu);
        plan.record(&mut batch, dop, w).unwrap();
        let count = batch.dispatches();
        batch.submit().unwrap();
        (w.read(gpu).unwrap(), count)
    })
}

/// Checks [`Plan::record_onto`] against the twin on the full pattern: w holds β·z already
/// (written here), the plan adds α·Xᵀ(v ⊙ (X·y)) onto it.
pub fn check_onto(gpu: &Gpu, x: &Csr, plan: &Plan, seed: u64) {
    assert!(plan.accumulates(false), "{}", plan.config.describe());
    let vecs = vectors(x.nrows, x.ncols, false, seed);
    let op = host_op(Pattern::Full, &vecs, 0.5, -1.5);
    let base: Vec<f32> = vecs.z.iter().map(|z| -1.5 * z).collect();
    // record_onto ignores the operands' β and z.
    let d = op.upload(gpu, x.ncols).unwrap();
    let w = GpuBuffer::upload(gpu, "w", &base).unwrap();
    let mut batch = Batch::new(gpu);
    plan.record_onto(&mut batch, &d.op(), &w).unwrap();
    batch.submit().unwrap();
    let got = w.read(gpu).unwrap();
    let (want, mag) = Matrix::Sparse(x).reference(&op);
    let cmp = compare(&got, &want, &mag, Matrix::Sparse(x).rounding_terms());
    assert!(
        cmp.ok(),
        "{}: w[{:?}]",
        plan.config.describe(),
        cmp.first_bad
    );
}
