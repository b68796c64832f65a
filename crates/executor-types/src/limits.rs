//! Per-job limits: manifest defaults, per-request overrides, server maxima.

use std::num::NonZeroU64;

use crate::{detail, ErrorDetail, Limits, LimitsOverride};

/// The built-in defaults (ARCHITECTURE.md), used when a manifest omits nothing but a server
/// wants a baseline.
pub fn builtin_defaults() -> Limits {
    let nz = |v| NonZeroU64::new(v).unwrap();
    Limits {
        wall_time_ms: nz(10_000),
        idle_ms: nz(10_000),
        cpu_ms: nz(10_000),
        memory_mb: nz(256),
        pids: nz(64),
        output_kb: nz(1024),
        max_artifacts: 16,
        max_artifact_bytes: 10 * 1024 * 1024,
    }
}

/// The server's maxima: a request may not ask for more.
pub fn builtin_maxima() -> Limits {
    let nz = |v| NonZeroU64::new(v).unwrap();
    Limits {
        wall_time_ms: nz(60_000),
        idle_ms: nz(60_000),
        cpu_ms: nz(60_000),
        memory_mb: nz(2048),
        pids: nz(512),
        output_kb: nz(16 * 1024),
        max_artifacts: 64,
        max_artifact_bytes: 100 * 1024 * 1024,
    }
}

/// Applies `over` on `base`, refusing any value above `max` (400 with details).
pub fn resolve(
    base: &Limits,
    over: Option<&LimitsOverride>,
    max: &Limits,
) -> Result<Limits, Vec<ErrorDetail>> {
    let mut out = base.clone();
    let mut errors = Vec::new();
    if let Some(o) = over {
        macro_rules! apply {
            ($field:ident, $name:literal, $get:expr) => {
                if let Some(v) = o.$field {
                    #[allow(clippy::redundant_closure_call)]
                    let (v_raw, m_raw) = ($get(v), $get(max.$field));
                    if v_raw > m_raw {
                        errors.push(detail(
                            concat!("/limits/", $name),
                            format!("{} exceeds the server maximum of {}", v_raw, m_raw),
                        ));
                    } else {
                        out.$field = v;
                    }
                }
            };
        }
        let nz = |v: NonZeroU64| v.get();
        let n = |v: u64| v;
        apply!(wall_time_ms, "wallTimeMs", nz);
        apply!(idle_ms, "idleMs", nz);
        apply!(cpu_ms, "cpuMs", nz);
        apply!(memory_mb, "memoryMb", nz);
        apply!(pids, "pids", nz);
        apply!(output_kb, "outputKb", nz);
        apply!(max_artifacts, "maxArtifacts", n);
        apply!(max_artifact_bytes, "maxArtifactBytes", n);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_within_and_above_maxima() {
        let base = builtin_defaults();
        let max = builtin_maxima();
        let o: LimitsOverride =
            serde_json::from_value(serde_json::json!({"wallTimeMs": 2000, "maxArtifacts": 0}))
                .unwrap();
        let r = resolve(&base, Some(&o), &max).unwrap();
        assert_eq!(r.wall_time_ms.get(), 2000);
        assert_eq!(r.max_artifacts, 0);
        assert_eq!(r.memory_mb, base.memory_mb);
        let o: LimitsOverride =
            serde_json::from_value(serde_json::json!({"memoryMb": 999999})).unwrap();
        let e = resolve(&base, Some(&o), &max).unwrap_err();
        assert_eq!(e[0].path, "/limits/memoryMb");
    }
}
