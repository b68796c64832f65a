//! Integration tests: real sandboxes running hostile programs (run as root).

mod basic;
mod common;
mod containment;
mod files;
mod spawner;
mod syscalls;
mod template;
mod v2;
