//! The instantiations of the pattern (the paper's Table 1).

use serde::Serialize;

/// The instantiations of Table 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pattern {
    /// α·Xᵀy (y ∈ ℝᵐ).
    Xty,
    /// Xᵀ(X·y).
    Xtxy,
    /// Xᵀ(v ⊙ (X·y)).
    Xtvxy,
    /// Xᵀ(X·y) + β·z.
    XtxyBz,
    /// α·Xᵀ(v ⊙ (X·y)) + β·z.
    Full,
}

impl Pattern {
    /// Every instantiation.
    pub const ALL: [Pattern; 5] = [
        Pattern::Xty,
        Pattern::Xtxy,
        Pattern::Xtvxy,
        Pattern::XtxyBz,
        Pattern::Full,
    ];

    /// The CLI name (`xty`, `xtxy`, `xtvxy`, `xtxy-bz`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Xty => "xty",
            Pattern::Xtxy => "xtxy",
            Pattern::Xtvxy => "xtvxy",
            Pattern::XtxyBz => "xtxy-bz",
            Pattern::Full => "full",
        }
    }

    /// Whether the instantiation takes v.
    pub fn has_v(self) -> bool {
        matches!(self, Pattern::Xtvxy | Pattern::Full)
    }

    /// Whether the instantiation adds β·z.
    pub fn has_z(self) -> bool {
        matches!(self, Pattern::XtxyBz | Pattern::Full)
    }
}
