//! The one error type of the crate: every public function returns `Result<_, Error>`.

use std::path::PathBuf;

/// Everything that can go wrong in wgsparse, each variant naming what and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No GPU adapter (hardware or software) was found.
    #[error(
        "no GPU adapter found{0}. Install a GPU driver with Vulkan support, or on headless \
         Linux the software Vulkan device: `sudo apt-get install -y mesa-vulkan-drivers`"
    )]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("could not create a device on adapter {adapter}: {message}")]
    RequestDevice {
        /// Adapter name.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// A shader failed to preprocess, parse or validate.
    #[error("shader {kernel}: {message}")]
    Shader {
        /// Kernel (shader) name, e.g. `sddmm.sm_l2`.
        kernel: String,
        /// Annotated message.
        message: String,
    },
    /// wgpu reported a validation or out-of-memory error while creating or running a kernel.
    #[error("GPU error in {kernel}: {message}")]
    Gpu {
        /// Kernel name or operation.
        kernel: String,
        /// wgpu's message.
        message: String,
    },
    /// The adapter lacks a capability the requested path needs.
    #[error("unsupported on this adapter: {0}")]
    Unsupported(String),
    /// Data does not fit a device limit.
    #[error("{what} needs {needed} but the device allows at most {limit}")]
    TooLarge {
        /// What was too big.
        what: String,
        /// What it needs (with unit).
        needed: String,
        /// The limit (with unit).
        limit: String,
    },
    /// Mismatched dimensions between operands.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A sparse matrix or dense array failed validation.
    #[error("invalid {what}: {message}")]
    Invalid {
        /// What was validated, e.g. `CSR matrix`.
        what: String,
        /// What is wrong and where (index, row, entry).
        message: String,
    },
    /// An invalid option or argument.
    #[error("invalid option: {0}")]
    Option(String),
    /// A malformed input file.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 when the error concerns the whole file).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// An I/O error on a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Training diverged: the model holds NaN or infinity.
    #[error("training diverged after epoch {epoch}: {message}")]
    Diverged {
        /// 1-based epoch after which the divergence was found.
        epoch: usize,
        /// What was found.
        message: String,
    },
    /// A GPU-vs-CPU check failed.
    #[error("check failed for {kernel}: {message}")]
    Check {
        /// Kernel name.
        kernel: String,
        /// What differed.
        message: String,
    },
}

/// Shorthand for `Result<T, wgsparse::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Invalid`] for `what` with `message`.
    pub fn invalid(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid {
            what: what.into(),
            message: message.into(),
        }
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::Parse`] for `path` at 1-based `line`.
    pub fn parse(path: impl Into<PathBuf>, line: u64, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}
