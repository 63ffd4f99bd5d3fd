//! Wide models on disk (versioned binary, written atomically) and wide data sets (LIBSVM
//! files or raw CSR folders with a `labels.f32`).

use std::io::{Read, Write};
use std::path::Path;

use crate::io::{read_csr_binary, read_libsvm, write_atomically};
use crate::sparse::Csr;
use crate::wide::{Model, ModelSpec};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"WGSWIDE\0";
/// Version of the model file format.
pub const VERSION: u32 = 1;

/// A trained wide model: its name, sizes and parameters in the original feature order
/// (feature j's parameters at `j·params_per_feature ..`, the bias last).
#[derive(Clone, Debug, PartialEq)]
pub struct WideModel {
    /// Model name (`lr`, `fm10`, `lsvm`, `lsr`, or a user model's name).
    pub name: String,
    /// Accums per sample.
    pub accums: usize,
    /// Parameters per feature.
    pub params_per_feature: usize,
    /// Number of features.
    pub n_features: usize,
    /// The parameters, bias last.
    pub params: Vec<f32>,
}

impl WideModel {
    /// The shipped model of this name, if it is one (`lr`, `lsvm`, `lsr`, `fm<k>`).
    pub fn shipped(&self) -> Option<Model> {
        match self.name.as_str() {
            "lr" => Some(Model::Lr),
            "lsvm" => Some(Model::Lsvm),
            "lsr" => Some(Model::Lsr),
            n => n
                .strip_prefix("fm")
                .and_then(|k| k.parse().ok())
                .map(|k| Model::Fm { k })
                .filter(|m| m.check().is_ok()),
        }
    }

    /// The descriptor of a shipped model; a user model must bring its own.
    pub fn spec(&self) -> Result<ModelSpec> {
        self.shipped()
            .ok_or_else(|| {
                Error::Option(format!(
                    "model `{}` is not a shipped model: give its ModelSpec",
                    self.name
                ))
            })?
            .spec()
    }

    /// Writes the model atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        write_atomically(path, |w| {
            let mut write = || -> std::io::Result<()> {
                w.write_all(MAGIC)?;
                w.write_all(&VERSION.to_le_bytes())?;
                w.write_all(&(self.name.len() as u32).to_le_bytes())?;
                w.write_all(self.name.as_bytes())?;
                w.write_all(&(self.accums as u32).to_le_bytes())?;
                w.write_all(&(self.params_per_feature as u32).to_le_bytes())?;
                w.write_all(&(self.n_features as u64).to_le_bytes())?;
                w.write_all(bytemuck::cast_slice(&self.params))?;
                Ok(())
            };
            write().map_err(|e| Error::io(path, e))
        })
    }

    /// Reads a model; a wrong magic or version, or a size that does not match the header,
    /// is an [`Error::Parse`] naming the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bad = |m: String| Error::parse(path, 0, m);
        let mut bytes = vec![];
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| Error::io(path, e))?;
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = bytes
                .get(at..at + n)
                .ok_or_else(|| bad(format!("truncated at byte {at} ({} bytes)", bytes.len())))?;
            at += n;
            Ok(s)
        };
        if take(8)? != MAGIC {
            return Err(bad("not a wgsparse wide model (bad magic)".into()));
        }
        let u32_at = |s: &[u8]| u32::from_le_bytes(s.try_into().expect("4 bytes"));
        let version = u32_at(take(4)?);
        if version != VERSION {
            return Err(bad(format!("format version {version}, expected {VERSION}")));
        }
        let name_len = u32_at(take(4)?) as usize;
        if name_len > 256 {
            return Err(bad(format!("model name of {name_len} bytes")));
        }
        let name = String::from_utf8(take(name_len)?.to_vec())
            .map_err(|_| bad("model name is not UTF-8".into()))?;
        let accums = u32_at(take(4)?) as usize;
        let params_per_feature = u32_at(take(4)?) as usize;
        let n_features = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes")) as usize;
        let len = n_features
            .checked_mul(params_per_feature)
            .and_then(|l| l.checked_add(1))
            .ok_or_else(|| bad("parameter count overflows".into()))?;
        let rest = take(len.saturating_mul(4)).map_err(|_| {
            bad(format!(
                "{n_features} features × {params_per_feature} parameters + bias need {} bytes \
                 of parameters",
                len.saturating_mul(4)
            ))
        })?;
        let params: Vec<f32> = rest
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        if at != bytes.len() {
            return Err(bad(format!("{} trailing bytes", bytes.len() - at)));
        }
        Ok(WideModel {
            name,
            accums,
            params_per_feature,
            n_features,
            params,
        })
    }
}

/// A wide data set: a LIBSVM file (labels ±1 or 0/1), or a raw CSR folder
/// ([`crate::io::write_csr_binary`]) holding `labels.f32` as well. Returns (features, labels).
pub fn read_data(path: impl AsRef<Path>) -> Result<(Csr, Vec<f32>)> {
    let path = path.as_ref();
    if path.is_dir() {
        let x = read_csr_binary(path)?;
        let lp = path.join("labels.f32");
        let bytes = std::fs::read(&lp).map_err(|e| Error::io(&lp, e))?;
        if bytes.len() != 4 * x.nrows {
            return Err(Error::parse(
                &lp,
                0,
                format!("{} bytes for {} samples (4 each)", bytes.len(), x.nrows),
            ));
        }
        let labels = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        return Ok((x, labels));
    }
    let d = read_libsvm(path)?;
    Ok((d.features, d.labels))
}

/// Writes `labels` as `labels.f32` into folder `dir` (atomically), beside a raw CSR export.
pub fn write_labels(dir: impl AsRef<Path>, labels: &[f32]) -> Result<()> {
    let p = dir.as_ref().join("labels.f32");
    write_atomically(&p, |w| {
        w.write_all(bytemuck::cast_slice(labels))
            .map_err(|e| Error::io(&p, e))
    })
}
