//! Validation of JSON bodies against a named type of the schema, with `details` entries
//! `{path, message}` (path is a JSON pointer into the body). Messages never echo the submitted
//! values (a 8 MiB file content must not come back in an error).

use std::collections::HashMap;

use serde_json::Value;

use crate::{detail, ErrorDetail, SCHEMA_JSON};

/// Compiled validators for the request types, built once at start.
pub struct SchemaValidator {
    validators: HashMap<&'static str, jsonschema::Validator>,
}

/// Types that arrive as request bodies or from the broker and are validated.
pub const VALIDATED: &[&str] = &[
    "ExecuteRequest",
    "StdinMessage",
    "BlobCheckRequest",
    "BlobFinalizeRequest",
    "Manifest",
    "JobSpec",
    "ControlMessage",
];

impl SchemaValidator {
    pub fn new() -> Self {
        let root: Value = serde_json::from_str(SCHEMA_JSON).expect("embedded schema is JSON");
        let mut validators = HashMap::new();
        for name in VALIDATED {
            let mut s = root.clone();
            s.as_object_mut()
                .unwrap()
                .insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
            let v = jsonschema::validator_for(&s).expect("embedded schema compiles");
            validators.insert(*name, v);
        }
        Self { validators }
    }

    /// Validates `value` as the schema type `name`.
    pub fn validate(&self, name: &str, value: &Value) -> Result<(), Vec<ErrorDetail>> {
        let v = self
            .validators
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not a validated schema type"));
        let errors: Vec<ErrorDetail> = v
            .iter_errors(value)
            .take(32)
            .map(|e| {
                let path = e.instance_path().to_string();
                detail(
                    if path.is_empty() {
                        "/".to_string()
                    } else {
                        path
                    },
                    e.masked().to_string(),
                )
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Validates then deserializes.
    pub fn parse<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        value: Value,
    ) -> Result<T, Vec<ErrorDetail>> {
        self.validate(name, &value)?;
        serde_json::from_value(value).map_err(|e| vec![detail("/", e.to_string())])
    }
}

impl Default for SchemaValidator {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_point_into_the_body() {
        let v = SchemaValidator::new();
        assert!(v
            .validate(
                "ExecuteRequest",
                &json!({"language":"py","files":[{"name":"a","content":"x"}]})
            )
            .is_ok());
        let e = v
            .validate("ExecuteRequest", &json!({"language":"py","files":[]}))
            .unwrap_err();
        assert_eq!(e[0].path, "/files");
        let e = v
            .validate(
                "ExecuteRequest",
                &json!({"language":"py","files":[{"name":"","content":"secret"}]}),
            )
            .unwrap_err();
        assert_eq!(e[0].path, "/files/0/name");
        assert!(!e[0].message.contains("secret"));
        let e = v
            .validate(
                "ExecuteRequest",
                &json!({"files":[{"name":"a","content":"x"}]}),
            )
            .unwrap_err();
        assert_eq!(e[0].path, "/");
        let e = v.validate("ExecuteRequest", &json!({"language":"py","files":[{"name":"a","content":"x"}],"limits":{"cpuMs":"x"}})).unwrap_err();
        assert_eq!(e[0].path, "/limits/cpuMs");
    }

    #[test]
    fn shipped_manifest_shape_is_valid() {
        let v = SchemaValidator::new();
        let m = json!({"language":"python","version":"3.11","aliases":["py"],"image":"host","entrypoint":"main.py",
            "run":{"command":["python3","-u","{entrypoint}"]},"interactive":true,
            "defaultLimits":{"wallTimeMs":10000,"idleMs":10000,"cpuMs":10000,"memoryMb":256,"pids":64,"outputKb":1024,"maxArtifacts":16,"maxArtifactBytes":10485760}});
        v.validate("Manifest", &m).unwrap();
        let _: crate::Manifest = v.parse("Manifest", m).unwrap();
    }
}
