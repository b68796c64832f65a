//! Splitting output into events that fit the push server's message limit.
//!
//! Pusher caps an event's `data` at 10 KB, and `data` is the JSON text of
//! `{"chunk": "...", "seq": N}`, so the limit applies after JSON escaping: a `"` costs two
//! bytes, a control character up to six, a non-ASCII character its UTF-8 length.
//! [`split_chunk`] cuts on character boundaries so each piece's event stays under the limit.

/// Default ceiling on an event's serialized `data`, in bytes: fits Pusher's 10 KB (10 240)
/// with room for the server's own framing.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 10_000;

/// Bytes of `{"chunk":"","seq":18446744073709551615}`: the output event's data around the
/// escaped chunk text, with the widest possible `seq`.
pub const CHUNK_EVENT_OVERHEAD: usize = 39;

/// The smallest budget that always fits one character (a `\u00XX` escape is 6 bytes).
const MIN_BUDGET: usize = 6;

/// Bytes `c` takes inside a JSON string as serde_json writes it.
pub fn json_escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Bytes `s` takes inside a JSON string (without the quotes).
pub fn json_escaped_str_len(s: &str) -> usize {
    s.chars().map(json_escaped_len).sum()
}

/// Splits `text` into consecutive pieces such that the data of an output event carrying one
/// piece, `{"chunk":"<piece>","seq":<any u64>}`, serializes to at most `max_event_bytes`.
///
/// Pieces concatenate back to `text`, end on UTF-8 character boundaries, and are never empty;
/// empty input gives no pieces. A `max_event_bytes` too small to hold one character is raised
/// to the minimum that does, so the split always makes progress.
pub fn split_chunk(text: &str, max_event_bytes: usize) -> Vec<&str> {
    split_with_budget(text, max_event_bytes.saturating_sub(CHUNK_EVENT_OVERHEAD))
}

/// Splits `text` so each piece's JSON-escaped length is at most `budget` bytes (raised to 6).
pub fn split_with_budget(text: &str, budget: usize) -> Vec<&str> {
    let budget = budget.max(MIN_BUDGET);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let len = json_escaped_len(c);
        if used + len > budget {
            pieces.push(&text[start..i]);
            start = i;
            used = 0;
        }
        used += len;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_len(piece: &str) -> usize {
        serde_json::to_string(&serde_json::json!({ "chunk": piece, "seq": u64::MAX }))
            .unwrap()
            .len()
    }

    #[test]
    fn overhead_matches_serde() {
        assert_eq!(event_len(""), CHUNK_EVENT_OVERHEAD);
        for c in [
            'a', '"', '\\', '\n', '\u{1}', '\u{7f}', 'é', '€', '😀', '\u{2028}',
        ] {
            assert_eq!(
                event_len(&c.to_string()),
                CHUNK_EVENT_OVERHEAD + json_escaped_len(c),
                "{c:?}"
            );
        }
    }

    #[test]
    fn pieces_fit_and_roundtrip() {
        // Deterministic pseudo-random text mixing ASCII, escapes and multi-byte characters.
        let alphabet = [
            'a', 'b', ' ', '\n', '"', '\\', '\u{0}', '\u{1f}', 'é', '€', '😀', '\t',
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..200 {
            let len = (round * 37) % 3000;
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            for max in [45, 64, 100, 1000, DEFAULT_MAX_EVENT_BYTES] {
                let pieces = split_chunk(&text, max);
                assert_eq!(pieces.concat(), text);
                for p in &pieces {
                    assert!(!p.is_empty());
                    assert!(
                        event_len(p) <= max,
                        "piece of {} bytes over {max}",
                        event_len(p)
                    );
                }
            }
        }
    }

    #[test]
    fn large_ascii_uses_few_pieces() {
        let text = "x".repeat(100_000);
        let pieces = split_chunk(&text, DEFAULT_MAX_EVENT_BYTES);
        assert_eq!(
            pieces.len(),
            100_000usize.div_ceil(DEFAULT_MAX_EVENT_BYTES - CHUNK_EVENT_OVERHEAD)
        );
        assert!(split_chunk("", 100).is_empty());
        // A budget too small for a character still makes progress.
        assert_eq!(split_chunk("😀😀", 1), vec!["😀", "😀"]);
    }
}
