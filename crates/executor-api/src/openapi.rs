//! The OpenAPI 3.1 document of the API, served at `/openapi.json`. Its components are the
//! `$defs` of `schema/executor.schema.json` (the same schema, references re-pointed), so the
//! two cannot drift.

use serde_json::{json, Map, Value};

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/$defs/") {
                    *r = format!("#/components/schemas/{name}");
                }
            }
            o.values_mut().for_each(rewrite_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn body(name: &str) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": r(name) } } })
}

fn resp(desc: &str, schema: Value) -> Value {
    json!({ "description": desc, "content": { "application/json": { "schema": schema } } })
}

fn err(desc: &str) -> Value {
    resp(desc, r("ErrorBody"))
}

fn id_param() -> Value {
    json!([{ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "format": "uuid" } }])
}

pub fn openapi_document() -> Value {
    let schema: Value = serde_json::from_str(executor_types::SCHEMA_JSON).expect("embedded schema");
    let mut defs = schema
        .get("$defs")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    rewrite_refs(&mut defs);
    let ok = resp("done", r("OkResponse"));
    let unauthorized = err("missing or invalid bearer token");
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Executor",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Runs user-submitted source files in an isolated sandbox and streams the output over a Pusher-protocol channel. The types are those of /schema.json."
        },
        "components": {
            "schemas": defs,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        },
        "security": [{ "bearer": [] }],
        "paths": {
            "/health": { "get": { "security": [], "summary": "Readiness probe", "responses": {
                "200": resp("ready", r("HealthResponse")), "503": resp("broker unreachable", r("HealthResponse")) } } },
            "/v1/execute": { "post": { "summary": "Submit a job", "requestBody": body("ExecuteRequest"), "responses": {
                "202": resp("accepted and enqueued", r("ExecuteResponse")),
                "400": err("invalid body, unknown language or version, bad file"),
                "401": unauthorized,
                "413": err("decoded files exceed MAX_FILES_BYTES"),
                "429": err("queue at MAX_QUEUE_DEPTH (retryAfterMs)") } } },
            "/v1/jobs/{id}/start": { "post": { "summary": "Start handshake", "parameters": id_param(), "responses": {
                "202": ok, "401": unauthorized, "404": err("unknown job") } } },
            "/v1/jobs/{id}/stdin": { "post": { "summary": "Send a stdin chunk", "parameters": id_param(), "requestBody": body("StdinMessage"), "responses": {
                "200": ok, "400": err("chunk missing"), "401": unauthorized, "404": err("unknown job"), "409": err("job has ended"),
                "429": err("frame rate (retryAfterMs) or pending bytes (capBytes) cap") } } },
            "/v1/jobs/{id}/stdin/close": { "post": { "summary": "End of input", "parameters": id_param(), "responses": {
                "200": ok, "401": unauthorized, "404": err("unknown job"), "409": err("job has ended") } } },
            "/v1/jobs/{id}/kill": { "post": { "summary": "SIGKILL the sandbox", "parameters": id_param(), "responses": {
                "200": ok, "401": unauthorized, "404": err("unknown job") } } },
            "/v1/jobs/{id}": { "get": { "summary": "Job status", "parameters": id_param(), "responses": {
                "200": resp("job found", r("JobStatus")), "401": unauthorized, "404": err("Job not found: <id>") } } },
            "/v1/jobs/{id}/status": { "get": { "summary": "Job status (late-join alias)", "parameters": id_param(), "responses": {
                "200": resp("job found", r("JobStatus")), "401": unauthorized, "404": err("Job not found: <id>") } } },
            "/v1/jobs/{id}/output": { "get": { "summary": "Collected RunResult", "parameters": id_param(), "responses": {
                "200": resp("output present", r("RunResult")), "401": unauthorized, "404": err("unknown, not collected, not ready or expired") } } },
            "/v1/languages": { "get": { "summary": "Available languages", "responses": {
                "200": resp("languages", json!({ "type": "array", "items": r("LanguageInfo") })), "401": unauthorized } } },
            "/v1/blobs/check": { "post": { "summary": "Which blobs exist; upload URLs for the missing", "requestBody": body("BlobCheckRequest"), "responses": {
                "200": resp("checked", r("BlobCheckResponse")), "400": err("malformed hash"), "401": unauthorized, "501": err("blob store unconfigured") } } },
            "/v1/blobs/finalize": { "post": { "summary": "Record uploaded blobs", "requestBody": body("BlobFinalizeRequest"), "responses": {
                "200": resp("recorded", r("BlobFinalizeResponse")), "400": err("malformed hash"), "401": unauthorized, "501": err("blob store unconfigured") } } },
            "/v1/channel-auth": { "post": { "summary": "Sign a private-run-<jobId> subscription (only with ENABLE_CHANNEL_AUTH=true)", "requestBody": body("ChannelAuthRequest"), "responses": {
                "200": resp("authorized", r("ChannelAuthResponse")), "400": err("missing fields"), "401": unauthorized, "403": err("channel not private-run-*") } } }
        }
    })
}
