//! Readers and writers: Matrix Market, LIBSVM, rating triplets, GraphChallenge TSV, IDX images.
//!
//! Every reader streams its input through a large buffer and reports malformed input as
//! [`crate::Error::Parse`] naming the file and the 1-based line (`file:line: message`); an
//! empty text file or one that ends too early is reported at the line where the missing part
//! was expected. Binary readers (IDX, binary ratings) use line 0 and give the byte offset or
//! record number in the message. Every writer replaces its file atomically
//! ([`write_atomically`]).

mod atomic;
mod csr_binary;
mod idx;
mod libsvm;
mod matrix_market;
mod ratings;
mod text;
mod tsv;

pub use atomic::write_atomically;
pub use csr_binary::{read_csr_binary, write_csr_binary, write_sddmm_operands};
pub use idx::{
    read_idx_images, read_idx_labels, write_idx_images, write_idx_labels, IdxImages,
    IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC,
};
pub use libsvm::{read_libsvm, read_libsvm_with, write_libsvm, LibSvm};
pub use matrix_market::{
    read_matrix_market, read_matrix_market_coo, read_matrix_market_from, write_matrix_market,
};
pub use ratings::{
    read_ratings, read_ratings_binary, read_ratings_in_range, write_ratings, write_ratings_binary,
    write_ratings_with_ids, IdMap, Ratings,
};
pub use tsv::{read_graphchallenge_tsv, read_graphchallenge_tsv_infer, write_graphchallenge_tsv};
