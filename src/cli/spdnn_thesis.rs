//! `wgsparse spdnn --approach csr-ell|csr-csr|csc-csc|all`: the thesis's approaches (Y kept
//! sparse, a dense batch buffer, expand and flush), timed and reported beside the fast paths.

use serde_json::json;

use wgsparse::sparse::Csr;
use wgsparse::spdnn::thesis::{BufferSize, ThesisOptions, ThesisPlan, Tiling};
use wgsparse::spdnn::{self, Network};
use wgsparse::{Gpu, Result};

/// One thesis approach's measured run.
pub struct Measured {
    /// Categories of the last run (0-based, increasing).
    pub categories: Vec<u32>,
    /// Median wall seconds of the timed runs.
    pub seconds: f64,
    /// Batches per run.
    pub batches: usize,
    /// Bands of input rows per run.
    pub bands: usize,
    /// Peak feature bytes (Y_in + Y_out + buffer + the other bands' inputs).
    pub peak: u64,
    /// Most nonzeros of Y after a layer.
    pub max_nnz: usize,
    /// Times Y_out grew in the warm-up run and in the last timed run.
    pub expansions: [usize; 2],
    /// GPU seconds of the multiply kernels in one more run, and whether from timestamps.
    pub multiply: Option<(f64, bool)>,
    /// Rows (columns for CSC·CSC) per batch.
    pub batch_rows: usize,
    /// 1D: where a row's sums are kept ("workgroup" or "buffer"; "-" for 2D).
    pub row_sums: &'static str,
    /// Bytes of the batch buffer.
    pub buffer_bytes: u64,
}

/// Plans `opts`, runs it once to warm up (pipelines, buffers sized by the expand), then
/// `reps` timed runs (0: the warm-up alone, timed); the median wall time of the whole inference (read-backs included).
/// With `spmm`, one more run times the multiply kernels alone (each in its own submission).
pub fn run(
    gpu: &Gpu,
    net: &Network,
    y0: &Csr,
    opts: &ThesisOptions,
    reps: usize,
    spmm: bool,
) -> Result<Measured> {
    let mut plan = ThesisPlan::new(gpu, net, y0, opts)?;
    let warm = plan.run(gpu)?;
    let warm_expansions = warm.expansions;
    // reps = 0: the warm-up is the one (timed) run.
    let mut times = vec![warm.seconds];
    let mut last = warm;
    if reps > 0 {
        times.clear();
    }
    for _ in 0..reps {
        last = plan.run(gpu)?;
        times.push(last.seconds);
    }
    times.sort_by(f64::total_cmp);
    let multiply = if spmm {
        plan.set_time_multiply(true);
        let split = plan.run(gpu)?;
        split
            .multiply_seconds
            .map(|s| (s, split.multiply_from_timestamps))
    } else {
        None
    };
    Ok(Measured {
        multiply,
        categories: plan.categories(gpu)?,
        seconds: times[times.len() / 2],
        batches: last.batches,
        bands: last.bands,
        peak: last.peak_feature_bytes,
        max_nnz: last.max_nnz,
        expansions: [warm_expansions, last.expansions],
        batch_rows: plan.batch_rows(),
        row_sums: match (opts.tiling, plan.row_in_workgroup()) {
            (Tiling::TwoD, _) => "-",
            (_, true) => "workgroup",
            (_, false) => "buffer",
        },
        buffer_bytes: plan.buffer_bytes(),
    })
}

/// The approach's name with its tiling and buffer, e.g. `csr-ell 2d 10%`.
pub fn label(opts: &ThesisOptions) -> String {
    let buffer = match opts.buffer {
        BufferSize::Fraction(f) => format!("{}%", f * 100.0),
        BufferSize::Rows(r) => format!("{r} rows"),
    };
    format!("{} {} {buffer}", opts.format.name(), opts.tiling.name())
}

/// Prints one result as a table or one JSON line.
#[allow(clippy::too_many_arguments)]
pub fn report(
    gpu: &Gpu,
    net: &Network,
    y0: &Csr,
    first_row: usize,
    opts: &ThesisOptions,
    m: &Measured,
    verdict: &str,
    ok: bool,
    ties: &[u32],
    json: bool,
) {
    let rows = y0.nrows;
    let n = net.n;
    let eps = spdnn::edges_per_second(net, rows, m.seconds);
    let dense_double = 2 * (rows * n * 4) as u64;
    let buffer = match opts.buffer {
        BufferSize::Fraction(f) => json!(f),
        BufferSize::Rows(r) => json!(format!("{r} rows")),
    };
    if json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name,
                "approach": opts.format.name(), "tiling": opts.tiling.name(), "buffer": buffer,
                "batch_rows": m.batch_rows, "buffer_bytes": m.buffer_bytes,
                "tile": [opts.tile_rows, opts.tile_cols], "wg": opts.workgroup, "row_sums": m.row_sums,
                "neurons": n, "layers": net.layers.len(), "rows": rows, "first_row": first_row, "bias": net.bias,
                "edges": net.edges(), "ms": m.seconds * 1e3, "timing": "wall clock",
                "multiply_ms": m.multiply.map(|t| t.0 * 1e3),
                "multiply_timing": m.multiply.map(|t| if t.1 { "timestamps" } else { "wall clock" }),
                "edges_per_second": eps, "batches": m.batches, "bands": m.bands, "max_nnz": m.max_nnz, "expansions": m.expansions,
                "active_rows": m.categories.len(),
                "peak_feature_bytes": m.peak, "dense_double_buffer_bytes": dense_double,
                "check": verdict, "ok": ok, "tie_rows": ties,
            })
        );
        return;
    }
    println!(
        "wgsparse spdnn on {} ({}): {}",
        gpu.caps.adapter_name,
        gpu.caps.backend,
        label(opts)
    );
    let mut t = super::table(&["property", "value"]);
    for (k, v) in [
        (
            "network",
            format!(
                "N={n} L={} bias={} edges={}",
                net.layers.len(),
                net.bias,
                net.edges()
            ),
        ),
        (
            "inputs",
            format!("{rows} rows from row {first_row}, {} nonzeros", y0.nnz()),
        ),
        (
            "batch",
            format!(
                "{} rows per batch ({:.1} MB buffer), {} batches per run over {} band(s); \
                 1D row sums in {}",
                m.batch_rows,
                m.buffer_bytes as f64 / 1e6,
                m.batches,
                m.bands,
                m.row_sums
            ),
        ),
        (
            "expand",
            format!(
                "Y_out grown {} times in the first run, {} in the last",
                m.expansions[0], m.expansions[1]
            ),
        ),
        (
            "total time",
            format!(
                "{:.3} ms (wall clock, read-backs included)",
                m.seconds * 1e3
            ),
        ),
        (
            "multiply time",
            m.multiply
                .map_or("not measured (--spmm-time)".to_string(), |(s, stamps)| {
                    format!(
                        "{:.3} ms ({}, a separate run)",
                        s * 1e3,
                        if stamps { "timestamps" } else { "wall clock" }
                    )
                }),
        ),
        (
            "rate",
            format!("{eps:.4e} edges/s ({:.3} TeraEdges/s)", eps / 1e12),
        ),
        (
            "feature memory",
            format!(
                "{:.1} MB peak (Y_in + Y_out + buffer; dense double buffer: {:.1} MB)",
                m.peak as f64 / 1e6,
                dense_double as f64 / 1e6
            ),
        ),
        ("most nonzeros of Y", m.max_nnz.to_string()),
        ("active rows at the end", m.categories.len().to_string()),
        ("check", verdict.to_string()),
    ] {
        t.add_row(vec![k.to_string(), v]);
    }
    println!("{t}");
}
