//! The thesis-approach runs `wgsparse spdnn` asks for (--approach, --tiling, --thesis-runs,
//! --buffer or --batch-rows).

use wgsparse::spdnn::thesis::{BufferSize, Format, ThesisOptions, Tiling};
use wgsparse::{Error, Result};

use super::{ApproachArg, RowSumsArg, SpdnnArgs, TilingArg};

/// `format:tiling` (e.g. `csr-ell:1d`) of --thesis-runs.
fn parse_thesis_run(s: &str) -> Result<(Format, Tiling)> {
    let (f, t) = s.split_once(':').unwrap_or((s, ""));
    let format = Format::ALL.into_iter().find(|x| x.name() == f);
    let tiling = Tiling::ALL.into_iter().find(|x| x.name() == t);
    match (format, tiling) {
        (Some(f), Some(t)) => Ok((f, t)),
        _ => Err(Error::Option(format!(
            "--thesis-runs {s:?}: expected format:tiling, format one of csr-ell, csr-csr, \
             csc-csc and tiling 1d or 2d"
        ))),
    }
}

/// The thesis-approach runs the arguments ask for: each buffer × format × tiling.
pub(super) fn thesis_runs(a: &SpdnnArgs) -> Result<Vec<ThesisOptions>> {
    let formats: Vec<Format> = match a.approach {
        ApproachArg::CsrEll => vec![Format::CsrEll],
        ApproachArg::CsrCsr => vec![Format::CsrCsr],
        ApproachArg::CscCsc => vec![Format::CscCsc],
        ApproachArg::All | ApproachArg::Thesis | ApproachArg::AutoThesis => Format::ALL.to_vec(),
        _ => return Ok(Vec::new()),
    };
    let both = matches!(
        a.approach,
        ApproachArg::All | ApproachArg::Thesis | ApproachArg::AutoThesis
    );
    let tilings = match a.tiling {
        Some(TilingArg::OneD) => vec![Tiling::OneD],
        Some(TilingArg::TwoD) => vec![Tiling::TwoD],
        Some(TilingArg::Both) => Tiling::ALL.to_vec(),
        None if both => Tiling::ALL.to_vec(),
        None => vec![Tiling::TwoD],
    };
    let buffers: Vec<BufferSize> = match a.batch_rows {
        Some(r) => vec![BufferSize::Rows(r)],
        None => a.buffer.iter().map(|&f| BufferSize::Fraction(f)).collect(),
    };
    // format:tiling pairs: --thesis-runs, else every format × tiling asked.
    let pairs: Vec<(Format, Tiling)> = if a.thesis_runs.is_empty() {
        formats
            .iter()
            .flat_map(|&f| tilings.iter().map(move |&t| (f, t)))
            .collect()
    } else {
        a.thesis_runs
            .iter()
            .map(|s| parse_thesis_run(s))
            .collect::<Result<_>>()?
    };
    // Buffers outermost: every approach at the first buffer before any at the next.
    let mut out = Vec::new();
    for &buffer in &buffers {
        for &(format, tiling) in &pairs {
            out.push(ThesisOptions {
                format,
                tiling,
                buffer,
                workgroup: a.wg.unwrap_or(ThesisOptions::default().workgroup),
                tile_rows: a.tile_rows,
                tile_cols: a.tile_cols,
                row_in_workgroup: match a.row_sums {
                    RowSumsArg::Auto => None,
                    RowSumsArg::Workgroup => Some(true),
                    RowSumsArg::Buffer => Some(false),
                },
                band_rows: a.band_rows,
            });
        }
    }
    Ok(out)
}
