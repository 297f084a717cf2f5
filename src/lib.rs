#[cfg(feature = "torch")]
pub mod runtime;
