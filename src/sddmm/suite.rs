//! The benchmark suite: power-law matrices shaped like the paper's data sets.

use crate::sparse::Csr;
use crate::{gen, Error, Result};

/// One suite matrix: a shape and a nonzero count, generated power-law.
#[derive(Clone, Copy, Debug)]
pub struct SuiteMatrix {
    /// Name used on the command line.
    pub name: &'static str,
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Nonzeros.
    pub nnz: usize,
    /// Zipf exponent of the row degrees.
    pub alpha: f64,
    /// Zipf exponent of the column popularities.
    pub col_alpha: f64,
}

/// The suite of the cuSDDMM evaluation (shapes of the real data sets, power-law patterns).
pub const SUITE: [SuiteMatrix; 9] = [
    SuiteMatrix {
        name: "nytimes",
        nrows: 300_000,
        ncols: 102_660,
        nnz: 69_679_427,
        alpha: 1.1,
        col_alpha: 1.1,
    },
    SuiteMatrix {
        name: "pubmed-lite",
        nrows: 2_000_000,
        ncols: 141_043,
        nnz: 120_000_000,
        alpha: 1.1,
        col_alpha: 1.1,
    },
    SuiteMatrix {
        name: "web-google",
        nrows: 916_428,
        ncols: 916_428,
        nnz: 5_105_039,
        alpha: 1.1,
        col_alpha: 1.1,
    },
    SuiteMatrix {
        name: "enron",
        nrows: 39_861,
        ncols: 28_102,
        nnz: 3_710_420,
        alpha: 1.1,
        col_alpha: 1.1,
    },
    SuiteMatrix {
        name: "nips",
        nrows: 1_500,
        ncols: 12_419,
        nnz: 746_316,
        alpha: 0.8,
        col_alpha: 0.8,
    },
    SuiteMatrix {
        name: "dense75k",
        nrows: 75_000,
        ncols: 75_000,
        nnz: 562_500_000,
        alpha: 0.5,
        col_alpha: 0.5,
    },
    // The thin-lead shapes again with other skews (a second pattern family of the same
    // shape, so results are not tuned to one): heavy rows over flat columns, and the reverse.
    SuiteMatrix {
        name: "nytimes-skew",
        nrows: 300_000,
        ncols: 102_660,
        nnz: 69_679_427,
        alpha: 1.4,
        col_alpha: 0.7,
    },
    SuiteMatrix {
        name: "pubmed-skew",
        nrows: 2_000_000,
        ncols: 141_043,
        nnz: 120_000_000,
        alpha: 0.7,
        col_alpha: 1.4,
    },
    SuiteMatrix {
        name: "demo",
        nrows: 3_000,
        ncols: 2_000,
        nnz: 60_000,
        alpha: 1.1,
        col_alpha: 1.1,
    },
];

/// Looks a suite matrix up by name.
pub fn find(name: &str) -> Result<SuiteMatrix> {
    SUITE
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = SUITE.iter().map(|m| m.name).collect();
            Error::Option(format!(
                "no suite matrix {name:?}; known: {}",
                names.join(", ")
            ))
        })
}

impl SuiteMatrix {
    /// Generates the matrix, every dimension and the nonzero count scaled by `scale`
    /// (1.0 = full size; nnz scales by `scale²`·… kept at the same density).
    /// Fails for a `scale` outside (0, 1] (NaN included) rather than clamping it.
    pub fn generate(&self, scale: f64, seed: u64) -> Result<Csr> {
        if !(scale > 0.0 && scale <= 1.0) {
            return Err(crate::Error::Option(format!(
                "scale {scale} must be in (0, 1]"
            )));
        }
        let (m, n, nnz) = self.scaled(scale);
        gen::power_law_skewed(m, n, nnz, self.alpha, self.col_alpha, seed)
    }

    /// (rows, columns, nonzeros) at `scale`: dimensions times `scale`, nonzeros times
    /// `scale²` (same density), each at least 1.
    pub fn scaled(&self, scale: f64) -> (usize, usize, usize) {
        let s = scale.clamp(1e-6, 1.0);
        let m = ((self.nrows as f64 * s).round() as usize).max(1);
        let n = ((self.ncols as f64 * s).round() as usize).max(1);
        let nnz = ((self.nnz as f64 * s * s).round() as usize).clamp(1, m * n);
        (m, n, nnz)
    }
}
