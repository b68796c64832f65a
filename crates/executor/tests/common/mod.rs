//! Helpers shared by the integration-test binaries of the `executor` crate.
#![allow(dead_code)]

pub mod serve;
