//! Generates the wire types from `schema/executor.schema.json` with typify, so the Rust structs
//! can never drift from the schema the API validates against and serves.

use std::{env, fs, path::PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let schema_path = manifest_dir.join("../../schema/executor.schema.json");
    println!("cargo:rerun-if-changed={}", schema_path.display());
    let text = fs::read_to_string(&schema_path).expect("read schema/executor.schema.json");
    let schema: schemars::schema::RootSchema =
        serde_json::from_str(&text).expect("schema/executor.schema.json is not a valid schema");
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    let mut space = typify::TypeSpace::new(&settings);
    space
        .add_root_schema(schema)
        .expect("typify could not convert the schema");
    let file = syn::parse2::<syn::File>(space.to_stream()).expect("typify emitted invalid Rust");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("generated.rs");
    fs::write(out, prettyplease::unparse(&file)).expect("write generated.rs");
}
