//! Model descriptors: which Aggregate / Loss / Apply functions a model splices into the
//! engine, how many Accums it keeps per sample and how many parameters per feature.

use serde::Serialize;

use crate::{Error, Result};

/// Largest FM rank (the Accums of a sample live in registers and workgroup memory).
pub const MAX_FM_K: usize = 32;

/// The shipped wide models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Model {
    /// Logistic regression: ŷ = b + w·x, ℓ = log(1 + e^{−yŷ}).
    Lr,
    /// Factorization machine of rank `k`: ŷ = b + w·x + ½ Σ_f ((v_f·x)² − Σ_j v_jf² x_j²),
    /// logistic loss.
    Fm {
        /// Rank of the pairwise factors, 1 ..= [`MAX_FM_K`].
        k: usize,
    },
    /// Linear SVM: ŷ = b + w·x, hinge loss max(0, 1 − yŷ).
    Lsvm,
    /// Least-squares regression: ŷ = b + w·x, squared loss (y − ŷ)².
    Lsr,
}

/// The loss a shipped model uses, labels y ∈ {−1, +1}.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// log(1 + e^{−yŷ}); dℓ/dŷ = −y / (1 + e^{yŷ}).
    Logistic,
    /// max(0, 1 − yŷ); dℓ/dŷ = −y where 1 − yŷ > 0, else 0.
    Hinge,
    /// (y − ŷ)²; dℓ/dŷ = 2(ŷ − y).
    Squared,
}

impl Loss {
    /// (ℓ, dℓ/dŷ) at score `yhat` and label `y` ∈ {−1, +1}, in f64.
    pub fn eval(self, yhat: f64, y: f64) -> (f64, f64) {
        match self {
            Loss::Logistic => {
                let m = -y * yhat;
                // log(1 + e^m) without overflow.
                let l = if m > 0.0 {
                    m + (-m).exp().ln_1p()
                } else {
                    m.exp().ln_1p()
                };
                (l, -y / (1.0 + (y * yhat).exp()))
            }
            Loss::Hinge => {
                let margin = 1.0 - y * yhat;
                if margin > 0.0 {
                    (margin, -y)
                } else {
                    (0.0, 0.0)
                }
            }
            Loss::Squared => ((y - yhat).powi(2), 2.0 * (yhat - y)),
        }
    }
}

impl Model {
    /// Parses `lr`, `fm`, `lsvm` or `lsr` (FM takes rank `k`).
    pub fn parse(name: &str, k: usize) -> Result<Model> {
        let m = match name {
            "lr" => Model::Lr,
            "fm" => Model::Fm { k },
            "lsvm" => Model::Lsvm,
            "lsr" => Model::Lsr,
            _ => {
                return Err(Error::Option(format!(
                    "unknown wide model `{name}` (lr, fm, lsvm, lsr)"
                )))
            }
        };
        m.check()?;
        Ok(m)
    }

    /// Fails with [`Error::Option`] when the FM rank is outside 1 ..= [`MAX_FM_K`].
    pub fn check(self) -> Result<()> {
        if let Model::Fm { k } = self {
            if k == 0 || k > MAX_FM_K {
                return Err(Error::Option(format!(
                    "FM rank k = {k} outside 1 ..= {MAX_FM_K}"
                )));
            }
        }
        Ok(())
    }

    /// The model's loss.
    pub fn loss(self) -> Loss {
        match self {
            Model::Lr | Model::Fm { .. } => Loss::Logistic,
            Model::Lsvm => Loss::Hinge,
            Model::Lsr => Loss::Squared,
        }
    }

    /// FM rank (0 for the linear models).
    pub fn k(self) -> usize {
        match self {
            Model::Fm { k } => k,
            _ => 0,
        }
    }

    /// Short name (`lr`, `fm`, `lsvm`, `lsr`).
    pub fn name(self) -> &'static str {
        match self {
            Model::Lr => "lr",
            Model::Fm { .. } => "fm",
            Model::Lsvm => "lsvm",
            Model::Lsr => "lsr",
        }
    }

    /// Parameters per feature: 1 (w_j), plus k factors for FM.
    pub fn params_per_feature(self) -> usize {
        1 + self.k()
    }

    /// Accums per sample: 1 (w·x), plus k + 1 for FM (v_f·x, and Σ_f Σ_j v_jf² x_j²: ŷ
    /// needs the squares' sum over f alone).
    pub fn accums(self) -> usize {
        match self.k() {
            0 => 1,
            k => 2 + k,
        }
    }

    /// The descriptor the engine compiles.
    pub fn spec(self) -> Result<ModelSpec> {
        self.check()?;
        let loss = match self.loss() {
            Loss::Logistic => "wide/loss_logistic",
            Loss::Hinge => "wide/loss_hinge",
            Loss::Squared => "wide/loss_squared",
        };
        let wgsl = match self {
            Model::Fm { k } => {
                format!("const FM_K: u32 = {k}u;\n#import wide/fm\n#import {loss}\n")
            }
            _ => format!("#import wide/linear\n#import {loss}\n"),
        };
        Ok(ModelSpec {
            name: match self {
                Model::Fm { k } => format!("fm{k}"),
                m => m.name().to_string(),
            },
            wgsl,
            accums: self.accums(),
            params_per_feature: self.params_per_feature(),
            init_std: if self.k() > 0 { 0.01 } else { 0.0 },
        })
    }
}

/// A model as the engine sees it: WGSL defining the ALA functions and its sizes. Ship your
/// own by filling one in; the engine splices `wgsl` in place of `shaders/wide/model.wgsl`.
///
/// `wgsl` must define (it may `#import` any shader under `shaders/`, e.g. `wide/loss_logistic`):
/// ```text
/// const NACC: u32 = …;    // Accums per sample, equal to `accums`
/// const NPARAM: u32 = …;  // parameters per feature, equal to `params_per_feature`
/// // Aggregate: add edge (feature j, value x) to this sample's Accums.
/// fn ala_aggregate(a: ptr<function, array<f32, NACC>>, j: u32, x: f32)
/// // Loss: from the complete Accums, the bias b and label y ∈ {−1, +1}: (ŷ, ℓ, dℓ/dŷ).
/// fn ala_loss(a: ptr<function, array<f32, NACC>>, b: f32, y: f32) -> vec3<f32>
/// // Apply: ∂ŷ/∂θ_i for parameter i of feature j at value x in sample slot s.
/// fn ala_apply(s: u32, j: u32, x: f32, i: u32) -> f32
/// ```
/// and may call the engine's `param(j, i) -> f32` (parameter i of feature j) and
/// `acc(s, a) -> f32` (Accum a of sample slot s, complete once Apply runs).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Name, used in kernel labels and saved models.
    pub name: String,
    /// The WGSL source of the ALA functions.
    pub wgsl: String,
    /// Accums per sample (`NACC`), 1 ..= 65.
    pub accums: usize,
    /// Parameters per feature (`NPARAM`), ≥ 1.
    pub params_per_feature: usize,
    /// Standard deviation of the seeded Gaussian initial parameters (the bias and the first
    /// parameter of each feature start at 0).
    pub init_std: f32,
}

/// Most Accums per sample a model may keep (FM at k = 32).
pub const MAX_ACCUMS: usize = 1 + 2 * MAX_FM_K;

impl ModelSpec {
    /// Fails with [`Error::Option`] when a size is out of range or the source is empty.
    pub fn check(&self) -> Result<()> {
        if self.accums == 0 || self.accums > MAX_ACCUMS {
            return Err(Error::Option(format!(
                "model {}: {} Accums per sample, outside 1 ..= {MAX_ACCUMS}",
                self.name, self.accums
            )));
        }
        if self.params_per_feature == 0 || self.params_per_feature > 256 {
            return Err(Error::Option(format!(
                "model {}: {} parameters per feature, outside 1 ..= 256",
                self.name, self.params_per_feature
            )));
        }
        if self.wgsl.trim().is_empty() {
            return Err(Error::Option(format!("model {}: empty WGSL", self.name)));
        }
        if !self.init_std.is_finite() || self.init_std < 0.0 {
            return Err(Error::Option(format!(
                "model {}: init_std {} is not a finite non-negative number",
                self.name, self.init_std
            )));
        }
        Ok(())
    }
}
