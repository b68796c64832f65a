//! (placeholder created by the lead so the workspace loads; overwrite freely)
