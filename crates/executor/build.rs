//! Embeds the shipped language manifests, so an installed `executor serve` run outside the
//! repository still offers every language whose toolchain the host has.

use std::{env, fs, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../languages");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut entries = Vec::new();
    if let Ok(dir) = fs::read_dir(&root) {
        for e in dir.flatten() {
            let manifest = e.path().join("manifest.json");
            if manifest.is_file() {
                println!("cargo:rerun-if-changed={}", manifest.display());
                let name = e.file_name().to_string_lossy().into_owned();
                entries.push(format!(
                    "({name:?}, include_str!({:?})),",
                    manifest.canonicalize().unwrap().display().to_string()
                ));
            }
        }
    }
    entries.sort();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("manifests.rs");
    fs::write(
        out,
        format!("/// (directory name, manifest.json) of every shipped language.\npub const MANIFESTS: &[(&str, &str)] = &[\n{}\n];\n", entries.join("\n")),
    )
    .unwrap();
}
