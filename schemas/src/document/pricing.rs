//! What the publisher assumed hardware and energy cost (`--gpu-hour-price`, `--kwh-price`, or a
//! campaign plan's `[pricing]`): each price with its currency, kept in the signed result so that
//! every cost a reader sees says the price it assumed. The costs themselves are derived where
//! they are shown (the report's `tables::cost`), never stored.

use crate::numbers::Finite;
use serde::{Deserialize, Serialize};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// The prices a run assumed; either may be absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// What one GPU costs for an hour (rented or amortised), whatever it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour: Option<Price>,
    /// What one kWh of energy costs, charged for the GPUs' measured energy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kwh: Option<Price>,
    /// Whether these are the prices of whoever renders the result rather than the publisher's:
    /// set only by a report priced at render time (`runner report --gpu-hour-price`, the
    /// site's price field), so that each cost says whose price it assumed. Never stored.
    #[serde(skip)]
    #[cfg_attr(feature = "json-schema", schemars(skip))]
    pub readers: bool,
}

/// An amount of money: a positive number and its currency (ISO 4217, `USD`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub amount: Finite,
    pub currency: String,
}

impl std::fmt::Display for Price {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.amount.get(), self.currency)
    }
}

/// Currency symbols read as their ISO 4217 codes.
const SYMBOLS: [(char, &str); 4] = [('$', "USD"), ('€', "EUR"), ('£', "GBP"), ('¥', "JPY")];

impl Price {
    /// Reads `2.50 USD`, `USD 2.50`, `2.50USD` or `$2.50` (`$` USD, `€` EUR, `£` GBP, `¥`
    /// JPY); a code is three letters, in any case. `flag` names the setting in errors: a bare
    /// number is refused, since a cost in no currency can be misread.
    pub fn parse(text: &str, flag: &str) -> Result<Price, String> {
        let t = text.trim();
        let (number, currency) =
            if let Some((symbol, code)) = SYMBOLS.iter().find(|(s, _)| t.starts_with(*s)) {
                (t[symbol.len_utf8()..].trim(), code.to_string())
            } else {
                let split = t
                    .find(|c: char| c.is_ascii_alphabetic())
                    .map(|at| (t[..at].trim(), t[at..].trim()));
                match split {
                    Some(("", _)) => {
                        // `USD 2.50`: the code first.
                        let at = t
                            .find(|c: char| !c.is_ascii_alphabetic())
                            .unwrap_or(t.len());
                        (t[at..].trim(), t[..at].to_string())
                    }
                    Some((number, code)) => (number, code.to_string()),
                    None => {
                        return Err(format!(
                        "{flag} {text:?}: a price needs its currency, as `2.50 USD` (or `$2.50`)"
                    ))
                    }
                }
            };
        if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(format!(
                "{flag} {text:?}: {currency:?} is not a currency code (three letters, ISO 4217: USD, EUR)"
            ));
        }
        let amount: f64 = number.parse().map_err(|_| {
            if number.contains(',') {
                format!(
                    "{flag} {text:?}: {number:?} has a decimal comma; write a decimal point \
                     (`2.50 USD`)"
                )
            } else {
                format!("{flag} {text:?}: {number:?} is not a number (a price is `2.50 USD`)")
            }
        })?;
        if !(amount.is_finite() && amount > 0.0) {
            return Err(format!("{flag} {text:?}: a price is a positive amount"));
        }
        Ok(Price {
            amount: Finite::new(amount).expect("finite, checked above"),
            currency: currency.to_ascii_uppercase(),
        })
    }
}

impl Pricing {
    /// The prices a run's spec (as the result keeps it, `run.spec`) names in its
    /// `gpu_hour_price` and `kwh_price`; `None` when it names neither. A price the spec could
    /// not hold (checked before the run) is left out.
    pub fn of_spec(spec: &serde_json::Value) -> Option<Pricing> {
        let read = |key: &str| {
            spec.get(key)
                .and_then(serde_json::Value::as_str)
                .and_then(|t| Price::parse(t, key).ok())
        };
        let p = Pricing {
            gpu_hour: read("gpu_hour_price"),
            kwh: read("kwh_price"),
            readers: false,
        };
        (p.gpu_hour.is_some() || p.kwh.is_some()).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_reads_with_its_currency_in_any_usual_spelling() {
        for (text, amount, currency) in [
            ("2.50 USD", 2.5, "USD"),
            ("USD 2.50", 2.5, "USD"),
            ("2.5usd", 2.5, "USD"),
            ("$2.50", 2.5, "USD"),
            ("€ 0.12", 0.12, "EUR"),
            ("0.3 chf", 0.3, "CHF"),
        ] {
            let p = Price::parse(text, "--x").unwrap();
            assert_eq!(
                (p.amount.get(), p.currency.as_str()),
                (amount, currency),
                "{text}"
            );
        }
        assert_eq!(
            Price::parse("2.5 USD", "--x").unwrap().to_string(),
            "2.5 USD"
        );
    }

    #[test]
    fn a_price_without_a_currency_or_amount_is_refused_by_name() {
        for (text, says) in [
            ("2.50", "needs its currency"),
            ("2.50 dollars", "not a currency code"),
            ("USD", "is not a number"),
            ("-1 USD", "positive"),
            ("0 EUR", "positive"),
            ("two USD", "is not a number"),
        ] {
            let e = Price::parse(text, "--gpu-hour-price").unwrap_err();
            assert!(
                e.contains("--gpu-hour-price") && e.contains(says),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn a_spec_names_its_prices() {
        let spec = serde_json::json!({"gpu_hour_price": "2.5 USD", "kwh_price": "0.1 EUR"});
        let p = Pricing::of_spec(&spec).unwrap();
        assert_eq!(p.gpu_hour.unwrap().to_string(), "2.5 USD");
        assert_eq!(p.kwh.unwrap().currency, "EUR");
        assert!(Pricing::of_spec(&serde_json::json!({})).is_none());
    }
}
