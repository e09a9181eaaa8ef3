//! The values of `runner run --shard i/N --start-at T` (what a shard means: `commands::shard`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `--shard i/N`: 0-based `i` below `N`, `N` at least 1.
pub fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not i/N (e.g. 0/4: the first of four clients)"))?;
    let number = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("{v:?} in {text:?} is not a whole number"))
    };
    let (i, n) = (number(i)?, number(n)?);
    if n == 0 {
        return Err("N (the number of clients) must be at least 1".into());
    }
    if i >= n {
        return Err(format!(
            "i is 0-based and below N: {i}/{n} names no client (0/{n} to {}/{n})",
            n - 1
        ));
    }
    Ok((i, n))
}

/// `--start-at T`: RFC 3339 in UTC (`Z`, any fraction), or unix seconds with a fraction.
pub fn parse_start_at(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(format!("{text:?} is not a time after 1970"));
        }
        return Ok(UNIX_EPOCH + Duration::from_secs_f64(seconds));
    }
    humantime::parse_rfc3339(text).map_err(|e| {
        format!("{text:?}: {e}; give RFC 3339 in UTC (2026-11-24T10:00:00.000Z) or unix seconds")
    })
}
