//! The options of a fused plan: what the caller fixes; the launch model ([`super::plan`])
//! and the tuner ([`super::tune`]) fill the rest.

#[cfg(doc)]
use super::{hot, reorder, split, Config, STREAM_EPL};
use super::{Atomics, Diag, Reorder, Variant};

/// Options; `None` fields come from the launch model.
#[derive(Clone, Debug)]
pub struct Options {
    /// The kernels.
    pub variant: Variant,
    /// Global f32 additions.
    pub atomics: Atomics,
    /// f32 additions into a workgroup copy of w (`Auto`: native where the device has them,
    /// [`crate::gpu::Caps::wg_f32_atomics`]).
    pub wg_atomics: Atomics,
    /// `stream`: the workgroup copy of w as exact fixed-point integer sums ([`Config::wg_fixed`];
    /// `None`: off, and `auto` times both on its pick; `Some(true)` elsewhere is refused).
    pub wg_fixed: Option<bool>,
    /// Reduce with subgroup shuffles when the adapter can (else workgroup memory).
    pub subgroups: bool,
    /// Aggregate w in workgroup memory (sparse fused; `None`: when n fits).
    pub workgroup_w: Option<bool>,
    /// Sparse fused kernel with w in global memory: how many of the columns with the most
    /// entries are aggregated in workgroup memory ([`hot`]; `None`: as many as fit, `Some(0)`:
    /// none, every product added straight to global memory). With w in workgroup memory:
    /// how many of them each vector adds to its own copy (hot copies: the vectors stop
    /// contending for the hot columns' words; `None` or `Some(0)`: none). Ignored by the
    /// other variants.
    pub hot_cols: Option<u32>,
    /// Sparse rows with more stored entries than this are split into chunks spread over many
    /// workgroups (their dot products by a pre-pass, [`Config::long_row`]); `None`: the
    /// launch model's threshold.
    pub long_row: Option<u32>,
    /// Lanes per row (power of two; sparse 1–32, dense up to the workgroup size).
    pub vs: Option<u32>,
    /// Invocations per workgroup (power of two, 32–1024).
    pub workgroup: Option<u32>,
    /// Rows per vector C.
    pub rows_per_vector: Option<u32>,
    /// Dense: elements per lane TL (1–16).
    pub tl: Option<u32>,
    /// Dense: rows whose loads a vector issues before reducing them ([`Config::rows_in_flight`];
    /// 1, 2 or 4; `None`: 1).
    pub rows_in_flight: Option<u32>,
    /// Sparse `fused` and `sorted`: the folded sequence ([`Config::fold`]); false keeps the
    /// separate β·z, long-row dot and long-row scatter passes (to time both).
    pub fold: bool,
    /// Sparse `fused`: entries per lane (1–4) held in registers from a row's dot product to
    /// its scatter ([`Config::regs`]; `None`: none, every entry read twice).
    pub regs: Option<u32>,
    /// Sparse `fused` with `regs`: the software pipeline over a vector's rows
    /// ([`Config::prefetch`]); `stream`: each tile's entries and row factors loaded at the top
    /// of the tile before, in flight during its row sums and scatter; `transpose` in row
    /// tiles: one workgroup per resident slot, the next tile's loads in flight during this
    /// tile's gathers.
    pub prefetch: bool,
    /// `stream`: entries per invocation, 4 or 8 (`None`: [`STREAM_EPL`]).
    pub epl: Option<u32>,
    /// `split`: rows per row tile ([`Config::row_tile`]; `None`: the launch model's,
    /// [`split::default_row_tile`]). `stream`: rows per tile at most (`None`: as many as
    /// workgroup memory holds beside w; fewer leave more workgroups resident).
    pub row_tile: Option<u32>,
    /// `split` and `stream`: the 16-bit layout ([`Config::key16`]; `None`: for `split` where
    /// it applies, with subgroup operations and row tiles of at most 32,768 rows; off for
    /// `stream`, where `Some(true)` needs X of at most 32,767 columns).
    pub key16: Option<bool>,
    /// `stream`: workgroups in its grid (at most one per tile; `None`: one per resident slot
    /// by the device model, [`crate::gpu::Residency`]); refused by the other variants.
    pub groups: Option<u32>,
    /// `stream`: y in workgroup memory ([`Config::y_shared`]; `None`: off, the faster on an
    /// H200; `Some(true)` is refused where it would leave a tile fewer than 32 rows).
    pub y_shared: Option<bool>,
    /// `stream`: copies of w in workgroup memory, 1, 2, 4 or 8 ([`Config::wg_copies`];
    /// `None`: one); refused where they would leave a tile fewer than 32 rows, or with
    /// fixed-point sums.
    pub wg_copies: Option<u32>,
    /// `stream`: tiles taken by units of lanes within a subgroup, with no barrier
    /// ([`Config::unit`]). Needs subgroup operations; refused with fixed-point sums,
    /// `prefetch` and `row_tile`.
    pub unit_tiles: UnitTiles,
    /// `transpose`: both gathers over this many column panels ([`Config::panels`]; `None`:
    /// one, each gather a single pass); refused by the other variants.
    pub panels: Option<u32>,
    /// `transpose` on re-indexed columns: Xᵀ's rows in the caller's column order
    /// ([`Config::xt_caller`]; `None`: that order, `Some(false)`: the plan's); `Some(true)` is
    /// refused by the other variants.
    pub xt_caller: Option<bool>,
    /// Sparse X: its columns re-indexed by descending entry count at plan time ([`reorder`];
    /// `Auto`: on the large-n path with skewed columns, [`Reorder::Auto`]).
    pub reorder: Reorder,
    /// Timing-only switches of the sparse `fused` and `sorted` kernels ([`Diag`]; results not
    /// valid with any on).
    pub diag: Diag,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            variant: Variant::Auto,
            atomics: Atomics::Auto,
            wg_atomics: Atomics::Auto,
            wg_fixed: None,
            subgroups: true,
            workgroup_w: None,
            hot_cols: None,
            long_row: None,
            vs: None,
            workgroup: None,
            rows_per_vector: None,
            tl: None,
            rows_in_flight: None,
            fold: true,
            regs: None,
            prefetch: false,
            epl: None,
            row_tile: None,
            key16: None,
            y_shared: None,
            wg_copies: None,
            unit_tiles: UnitTiles::Off,
            panels: None,
            xt_caller: None,
            groups: None,
            reorder: Reorder::Auto,
            diag: Diag::default(),
        }
    }
}

/// Who takes the stream kernel's tiles ([`Options::unit_tiles`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitTiles {
    /// The whole workgroup, meeting at barriers in each tile.
    #[default]
    Off,
    /// Units of the adapter's least subgroup size.
    Subgroup,
    /// Units of this many lanes: a power of two from 2 to the adapter's least subgroup size.
    Lanes(u32),
}
