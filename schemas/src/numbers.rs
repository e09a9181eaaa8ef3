//! Number types that keep the document honest in every JSON reader.
//!
//! * [`Finite`]: an `f64` that is never NaN or ±Infinity. `serde_json` would write such
//!   a value as `null`; we refuse to construct it instead, so the fault is caught where
//!   it is made, not by a reader.
//! * [`JsonU64`]: a `u64` written as a JSON number while it is exactly representable as
//!   an IEEE double (≤ 2^53 − 1) and as a decimal string above, so JavaScript readers
//!   never round it silently.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A finite `f64`. Construct with [`Finite::new`], which rejects NaN and infinities.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Finite(f64);

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0} is not a finite number")]
pub struct NotFinite(pub f64);

impl Finite {
    pub const ZERO: Finite = Finite(0.0);

    pub fn new(value: f64) -> Result<Self, NotFinite> {
        if value.is_finite() {
            Ok(Finite(value))
        } else {
            Err(NotFinite(value))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Finite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for Finite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        Finite::new(v).map_err(de::Error::custom)
    }
}

/// Largest integer a JSON reader that parses numbers as doubles keeps exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A `u64` that survives JavaScript: a number up to 2^53 − 1, a decimal string above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonU64(pub u64);

impl Serialize for JsonU64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 <= MAX_SAFE_INTEGER {
            s.serialize_u64(self.0)
        } else {
            s.collect_str(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for JsonU64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = JsonU64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer up to 2^53-1, or a decimal string above it")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<JsonU64, E> {
                if v > MAX_SAFE_INTEGER {
                    return Err(E::custom(format!(
                        "{v} is above 2^53-1 and must be written as a string"
                    )));
                }
                Ok(JsonU64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonU64, E> {
                let digits_only = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
                let n: u64 = v
                    .parse()
                    .ok()
                    .filter(|_| digits_only)
                    .ok_or_else(|| E::custom(format!("{v:?} is not a decimal u64")))?;
                if n <= MAX_SAFE_INTEGER || v.starts_with('0') {
                    return Err(E::custom(format!(
                        "{v:?} must be written as a JSON number (or has a leading zero)"
                    )));
                }
                Ok(JsonU64(n))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(feature = "json-schema")]
impl schemars::JsonSchema for JsonU64 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonU64".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A u64: a JSON integer up to 2^53-1, a decimal string above it.",
            "anyOf": [
                { "type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER },
                { "type": "string", "pattern": "^[1-9][0-9]{15,19}$" }
            ]
        })
    }
}

/// Whether a count is 0: what serde skips of a count that came with a later version.
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_rejects_nan_and_infinity() {
        assert!(Finite::new(f64::NAN).is_err());
        assert!(Finite::new(f64::INFINITY).is_err());
        assert!(Finite::new(f64::NEG_INFINITY).is_err());
        assert_eq!(Finite::new(1.5).unwrap().get(), 1.5);
        assert!(serde_json::from_str::<Finite>("null").is_err());
    }

    #[test]
    fn u64_is_a_number_up_to_2_53_and_a_string_above() {
        assert_eq!(
            serde_json::to_string(&JsonU64(MAX_SAFE_INTEGER)).unwrap(),
            "9007199254740991"
        );
        assert_eq!(
            serde_json::to_string(&JsonU64(MAX_SAFE_INTEGER + 1)).unwrap(),
            "\"9007199254740992\""
        );
        assert_eq!(
            serde_json::to_string(&JsonU64(u64::MAX)).unwrap(),
            "\"18446744073709551615\""
        );
        for v in [0, 42, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, u64::MAX] {
            let s = serde_json::to_string(&JsonU64(v)).unwrap();
            assert_eq!(serde_json::from_str::<JsonU64>(&s).unwrap(), JsonU64(v));
        }
        // One spelling per value: no big numbers as numbers, no small ones as strings.
        assert!(serde_json::from_str::<JsonU64>("9007199254740992").is_err());
        assert!(serde_json::from_str::<JsonU64>("\"42\"").is_err());
    }
}
