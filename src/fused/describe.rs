//! The one-line description of a resolved configuration (tables, logs, check failures).

use super::{Config, Variant};

impl Config {
    /// A short description, e.g. `fused vs=8 wg=256 c=12 g=112 shared native sg`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} vs={} wg={} c={} g={}",
            self.variant.name(),
            self.vs,
            self.workgroup,
            self.rows_per_vector,
            self.groups
        );
        if self.dense {
            s += &format!(" tl={}", self.tl);
            if self.rows_in_flight > 1 {
                s += &format!(" rif={}", self.rows_in_flight);
            }
        } else if self.hot_prefix() {
            s += &format!(" wg-w hot-prefix-copies={}", self.hot_cols);
        } else if self.workgroup_w && self.hot_cols > 0 {
            s += &format!(" wg-w hot-copies={}", self.hot_cols);
        } else if self.workgroup_w {
            s += " wg-w";
        } else if self.hot_cols > 0 {
            s += &format!(" global-w hot={}", self.hot_cols);
        } else {
            s += " global-w";
        }
        if self.tile > 0 {
            s += &format!(" tile={}", self.tile);
            if self.segmented {
                s += " seg";
            }
            // The stream kernel's and the transpose's row tiles' pipelines.
            if self.prefetch && matches!(self.variant, Variant::Stream | Variant::Transpose) {
                s += " pipe";
            }
            if self.y_shared {
                s += " y-wg";
            }
            if self.wg_copies > 1 {
                s += &format!(" w-copies={}", self.wg_copies);
            }
            if self.unit > 0 {
                s += &format!(" unit={}", self.unit);
            }
            if self.variant == Variant::Stream && self.key16 {
                s += " key16";
            }
        }
        if self.regs > 0 {
            s += &format!(" regs={}", self.regs);
            if self.prefetch {
                s += " prefetch";
            }
        }
        if self.panels > 1 {
            s += &format!(" panels={}", self.panels);
        }
        if self.row_tile > 0 {
            s += &format!(" row-tile={}", self.row_tile);
            if self.key16 {
                s += " key16";
            }
        }
        if self.long_row != u32::MAX {
            s += &format!(" long>{}", self.long_row);
            if !self.fold {
                s += " unfolded";
            }
        }
        if self.reorder {
            s += " reorder";
            if self.xt_caller {
                s += " xt-caller";
            }
        }
        s += if self.native_atomics {
            " native"
        } else {
            " cas"
        };
        if self.wg_native_atomics {
            s += " wg-native";
        }
        if self.wg_fixed {
            s += " wg-fixed";
        }
        s += if self.subgroup_reduce {
            " sg"
        } else {
            " wgmem"
        };
        if self.diag.any() {
            s += &format!(" diag={}", self.diag.names().join("+"));
        }
        s
    }
}
