//! Go's duration syntax (`time.ParseDuration`), which containerd's `hosts.toml`
//! `dial_timeout` takes.

/// Whether `s` is a Go `time.ParseDuration` string: an optional sign, then one or more
/// decimal numbers each with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), or
/// `0`.
pub(crate) fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[num_end..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for ok in ["3s", "0", "1h30m", "1.5h", "-2ms", "10µs", "300ns"] {
            assert!(is_go_duration(ok), "{ok}");
        }
        for bad in ["", "3", "s", "3 s", "1..2s", "3d", "."] {
            assert!(!is_go_duration(bad), "{bad}");
        }
    }
}
