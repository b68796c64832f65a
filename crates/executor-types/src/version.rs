//! Version ordering for language resolution: numeric where both parts are numbers, so
//! `3.10 > 3.9` and `20.1 > 9.11`; non-numeric parts compare as text.

use std::cmp::Ordering;

pub fn compare(a: &str, b: &str) -> Ordering {
    let split = |s: &str| -> Vec<String> {
        s.split(['.', '-', '+', '_'])
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (pa, pb) = (split(a), split(b));
    for i in 0..pa.len().max(pb.len()) {
        let (x, y) = (pa.get(i), pb.get(i));
        let ord = match (x, y) {
            (Some(x), Some(y)) => match (x.parse::<u64>(), y.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                (Ok(_), Err(_)) => Ordering::Greater,
                (Err(_), Ok(_)) => Ordering::Less,
                _ => x.cmp(y),
            },
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => Ordering::Equal,
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::compare;
    use std::cmp::Ordering::*;

    #[test]
    fn numeric_not_lexical() {
        assert_eq!(compare("3.10", "3.9"), Greater);
        assert_eq!(compare("3.9", "3.10"), Less);
        assert_eq!(compare("20.1.0", "9.11"), Greater);
        assert_eq!(compare("1.2", "1.2.0"), Less);
        assert_eq!(compare("17.0.15", "17.0.15"), Equal);
    }
}
