#![warn(missing_docs, missing_debug_implementations, unreachable_pub, rust_2018_idioms)]
#![deny(unused_must_use)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
//! placeholder

mod error;
pub mod protocol;

pub use error::{BoxError, Error, Result};
pub mod transport;
