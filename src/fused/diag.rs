//! Timing-only switches of the sparse `fused`, `sorted` and `stream` kernels, to attribute their time
//! to the scatter into the workgroup copy of w and to its flush into global w (issue 9: at
//! 500k × 4,096 the kernel streams X at 19% of the copy roofline, and neither the atomics'
//! kind nor the workgroup footprint was the lever), and of the stream kernel's fixed-point
//! sums of w ([`Config::wg_fixed`]).
//!
//! **Results are not valid** with any switch on: never a default, refused with `--check`
//! and by the autotuner.

use serde::Serialize;

use super::{Config, Variant};
use crate::{Error, Result};

/// Timing-only switches (see the module docs). Every load and product the kernel makes is
/// kept (an impossible comparison consumes them), so a switch removes only what it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diag {
    /// No adds into the workgroup copy of w (nor, it staying zero, the flush's global adds).
    pub skip_wg_adds: bool,
    /// The workgroup adds as plain read-modify-writes (racing vectors lose updates): the
    /// compare-exchange loop's cost beyond a load and a store.
    pub plain_wg_adds: bool,
    /// No flush of the workgroup copy into global w.
    pub skip_flush: bool,
    /// The workgroup adds as integer adds of the f32 bits (the sums are garbage): what a
    /// fixed-point accumulation in workgroup memory would pay for its adds. The compare-exchange
    /// loop or native f32 add is not taken.
    pub int_wg_adds: bool,
    /// Fixed-point sums of w ([`Config::wg_fixed`]): never send a workgroup's adds to global
    /// memory (a bound that is not finite then garbles its sums).
    pub fixed_no_global: bool,
    /// Fixed-point sums of w: only the low word's add (the sums are garbage).
    pub fixed_lo_only: bool,
    /// The stream kernel: every tile row's factor 1, with no loads of X's row numbers nor of
    /// v and y at them (long rows keep theirs; the sums are wrong wherever v or, in `xty`, y
    /// is not all ones): the factor chain's whole cost.
    pub skip_row_factors: bool,
    /// The stream kernel: row factors read at the tile-row index itself, not at X's row
    /// number loaded from the tile (garbage factors): one dependent load taken off the chain.
    pub direct_rows: bool,
}

/// One switch: its name for `--diag`, its kernels' define and its field.
struct Switch {
    name: &'static str,
    define: &'static str,
    field: fn(&mut Diag) -> &mut bool,
}

/// Every switch, in the order names and defines are listed.
static SWITCHES: [Switch; 8] = [
    switch("skip-wg-adds", "DIAG_SKIP_WG_ADDS", |d| &mut d.skip_wg_adds),
    switch("plain-wg-adds", "DIAG_PLAIN_WG_ADDS", |d| {
        &mut d.plain_wg_adds
    }),
    switch("skip-flush", "DIAG_SKIP_FLUSH", |d| &mut d.skip_flush),
    switch("int-wg-adds", "DIAG_INT_WG_ADDS", |d| &mut d.int_wg_adds),
    switch("fixed-no-global", "DIAG_FX_NO_GLOBAL", |d| {
        &mut d.fixed_no_global
    }),
    switch("fixed-lo-only", "DIAG_FX_LO_ONLY", |d| &mut d.fixed_lo_only),
    switch("skip-row-factors", "DIAG_SKIP_FACTORS", |d| {
        &mut d.skip_row_factors
    }),
    switch("direct-rows", "DIAG_DIRECT_ROWS", |d| &mut d.direct_rows),
];

/// A row of [`SWITCHES`].
const fn switch(
    name: &'static str,
    define: &'static str,
    field: fn(&mut Diag) -> &mut bool,
) -> Switch {
    Switch {
        name,
        define,
        field,
    }
}

impl Diag {
    /// Every switch's name, as the CLI's `--diag` takes them.
    pub fn all_names() -> Vec<&'static str> {
        SWITCHES.iter().map(|s| s.name).collect()
    }

    /// Parses a comma-separated list of [`Diag::all_names`].
    pub fn parse(list: &str) -> Result<Self> {
        let mut d = Diag::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(s) = SWITCHES.iter().find(|s| s.name == name) else {
                return Err(Error::Option(format!(
                    "--diag {name}: expected one of {}",
                    Diag::all_names().join(", ")
                )));
            };
            *(s.field)(&mut d) = true;
        }
        if [d.skip_wg_adds, d.plain_wg_adds, d.int_wg_adds]
            .iter()
            .filter(|on| **on)
            .count()
            > 1
        {
            return Err(Error::Option(
                "--diag: skip-wg-adds, plain-wg-adds and int-wg-adds exclude each other".into(),
            ));
        }
        if d.skip_row_factors && d.direct_rows {
            return Err(Error::Option(
                "--diag: skip-row-factors and direct-rows exclude each other".into(),
            ));
        }
        Ok(d)
    }

    /// Whether any switch is on (the run's results are then not valid).
    pub fn any(&self) -> bool {
        *self != Diag::default()
    }

    /// The switches that are on, by name.
    pub fn names(&self) -> Vec<&'static str> {
        self.on().map(|s| s.name).collect()
    }

    /// The kernels' defines.
    pub(crate) fn defines(&self) -> Vec<&'static str> {
        self.on().map(|s| s.define).collect()
    }

    /// The switches that are on.
    fn on(&self) -> impl Iterator<Item = &'static Switch> {
        let mut d = *self;
        SWITCHES.iter().filter(move |s| *(s.field)(&mut d))
    }
}

/// Sets `config`'s switches: only the sparse `fused` and `sorted` kernels with w in workgroup
/// memory have them.
pub(super) fn apply(config: &mut Config, diag: Diag) -> Result<()> {
    let fits = !config.dense
        && config.workgroup_w
        && matches!(
            config.variant,
            Variant::Fused | Variant::Sorted | Variant::Stream
        );
    if diag.any() && !fits {
        return Err(Error::Option(format!(
            "--diag {}: only the sparse fused, sorted and stream kernels with w in workgroup \
             memory have it (this plan: {})",
            diag.names().join(","),
            config.describe()
        )));
    }
    if config.wg_fixed && (diag.skip_wg_adds || diag.plain_wg_adds || diag.int_wg_adds) {
        return Err(Error::Option(format!(
            "--diag {}: the switches of float adds, not with fixed-point sums of w",
            diag.names().join(",")
        )));
    }
    if (diag.skip_row_factors || diag.direct_rows) && config.variant != Variant::Stream {
        return Err(Error::Option(format!(
            "--diag {}: switches of the stream kernel's row factors (this plan: {})",
            diag.names().join(","),
            config.describe()
        )));
    }
    if !config.wg_fixed && (diag.fixed_no_global || diag.fixed_lo_only) {
        return Err(Error::Option(format!(
            "--diag {}: switches of the fixed-point sums of w (--wg-fixed on)",
            diag.names().join(",")
        )));
    }
    config.diag = diag;
    // Integer adds replace the adds' kind: never rewritten into float ones.
    config.wg_native_atomics &= !diag.int_wg_adds;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_refuses_unknown_or_exclusive_ones() {
        let d = Diag::parse("skip-flush, plain-wg-adds").unwrap();
        assert!(d.any() && d.plain_wg_adds && d.skip_flush && !d.skip_wg_adds);
        assert_eq!(d.names(), ["plain-wg-adds", "skip-flush"]);
        assert_eq!(d.defines(), ["DIAG_PLAIN_WG_ADDS", "DIAG_SKIP_FLUSH"]);
        assert!(!Diag::parse("").unwrap().any());
        assert!(Diag::parse("skip-apply").is_err());
        assert!(Diag::parse("skip-wg-adds,plain-wg-adds").is_err());
        assert!(Diag::parse("int-wg-adds,plain-wg-adds").is_err());
        assert!(Diag::parse("skip-row-factors,direct-rows").is_err());
        assert_eq!(
            Diag::parse("direct-rows").unwrap().defines(),
            ["DIAG_DIRECT_ROWS"]
        );
        assert_eq!(
            Diag::parse("int-wg-adds").unwrap().defines(),
            ["DIAG_INT_WG_ADDS"]
        );
    }
}
