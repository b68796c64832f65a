//! Integration tests of executor-push: the embedded server's WebSocket protocol and HTTP API
//! (with a Rust WebSocket client), the HttpPublisher against it and against a dead server,
//! and the Node end-to-end test with the official pusher-js and pusher SDK.

mod harness;
mod node;
mod protocol;
mod publisher;
mod wsclient;
