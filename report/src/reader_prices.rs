//! Prices given by whoever renders results (`runner report|diff|compare --gpu-hour-price`, the
//! site's price field), for results their publisher did not price or priced at another rate: a
//! reader comparing an H100 result with an H200 one prices each GPU at what it costs them.
//!
//! They sit between loading and rendering: [`ReaderPrices::apply`] replaces a loaded result's
//! `pricing` in memory (the signed bytes and their verdict are untouched) and marks it the
//! reader's, so every cost the report then derives (`tables::cost`) says whose price it assumed.

use crate::input::Loaded;
use schemas::document::pricing::{Price, Pricing};
use schemas::document::Predicate;
use std::borrow::Cow;

/// A reader's prices: GPU-hour prices by the GPU they apply to, and a kWh price.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReaderPrices {
    /// `(GPU name or None, price)` in the order given: a result takes the first whose name
    /// its GPUs' name contains (any case), else the first without a name.
    gpu_hour: Vec<(Option<String>, Price)>,
    kwh: Option<Price>,
}

/// A render's options as the module's request carries them (JSON, `abi`): the reader's prices
/// as typed, read by [`ReaderPrices::parse`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour_price: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kwh_price: Option<String>,
}

impl RenderOptions {
    /// The options of a request's options part (`abi`) or a site's call; empty: none.
    pub fn from_json(json: &[u8]) -> Result<RenderOptions, String> {
        if json.is_empty() {
            return Ok(Default::default());
        }
        serde_json::from_slice(json).map_err(|e| format!("render options: {e}"))
    }

    /// The prices these options give (none when they give none).
    pub fn prices(&self) -> Result<ReaderPrices, String> {
        ReaderPrices::parse(
            self.gpu_hour_price.as_deref().unwrap_or_default(),
            self.kwh_price.as_deref().unwrap_or_default(),
        )
    }
}

impl ReaderPrices {
    /// Reads `gpu_hour`, comma-separated `[GPU=]PRICE` entries (`2.49 USD`, `H100=2.49 USD,
    /// H200=3.10 USD`), and `kwh`, one price (`0.12 USD`); empty text gives no price. Errors name
    /// the flag and the entry.
    pub fn parse(gpu_hour: &str, kwh: &str) -> Result<ReaderPrices, String> {
        let mut prices = ReaderPrices::default();
        let entries: Vec<&str> = gpu_hour
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        // `2,49 EUR` is one price with a decimal comma, not two entries: say so, rather than
        // that `2` has no currency.
        if let Some(pair) = entries.windows(2).find(|pair| {
            let whole = pair[0].rsplit('=').next().unwrap_or_default().trim();
            !whole.is_empty()
                && whole.chars().all(|c| c.is_ascii_digit())
                && pair[1].starts_with(|c: char| c.is_ascii_digit())
        }) {
            return Err(format!(
                "--gpu-hour-price {:?}: a decimal comma? Entries are separated by commas; write \
                 the price with a decimal point (`2.49 EUR`)",
                format!("{},{}", pair[0], pair[1])
            ));
        }
        for entry in entries {
            let (gpu, price) = match entry.split_once('=') {
                Some((gpu, price)) => {
                    let gpu = gpu.trim();
                    if gpu.is_empty() {
                        return Err(format!(
                            "--gpu-hour-price {entry:?}: no GPU name before `=` (as `H100=2.49 USD`)"
                        ));
                    }
                    (Some(gpu.to_string()), price)
                }
                None => (None, entry),
            };
            prices
                .gpu_hour
                .push((gpu, Price::parse(price, "--gpu-hour-price")?));
        }
        let kwh = kwh.trim();
        if !kwh.is_empty() {
            prices.kwh = Some(Price::parse(kwh, "--kwh-price")?);
        }
        Ok(prices)
    }

    /// The prices a render's options JSON gives (empty or absent: none), as the module's
    /// request and the site's calls carry them.
    pub fn of_options(json: Option<&str>) -> Result<ReaderPrices, String> {
        RenderOptions::from_json(json.unwrap_or_default().as_bytes())?.prices()
    }

    /// Whether no price was given.
    pub fn is_empty(&self) -> bool {
        self.gpu_hour.is_empty() && self.kwh.is_none()
    }

    /// The GPU-hour price for a host whose GPUs are named `gpu` (`None`: the host lists none).
    fn gpu_hour_for(&self, gpu: Option<&str>) -> Option<&Price> {
        let named = gpu.map(str::to_ascii_lowercase).and_then(|gpu| {
            self.gpu_hour.iter().find_map(|(name, price)| {
                name.as_ref()
                    .filter(|n| gpu.contains(&n.to_ascii_lowercase()))
                    .map(|_| price)
            })
        });
        named.or_else(|| {
            self.gpu_hour
                .iter()
                .find_map(|(name, price)| name.is_none().then_some(price))
        })
    }

    /// The pricing `p` takes at these prices, in place of all its publisher gave (a result
    /// shows one party's prices, never a mix); `None` where none applies to it (no entry names
    /// its GPU, no unnamed or kWh price): it keeps the publisher's.
    fn pricing_for(&self, p: &Predicate) -> Option<Pricing> {
        let gpu = crate::view::gpus(&p.host).map(|(_, name)| name);
        let gpu_hour = self.gpu_hour_for(gpu.as_deref()).cloned();
        (gpu_hour.is_some() || self.kwh.is_some()).then(|| Pricing {
            gpu_hour,
            kwh: self.kwh.clone(),
            readers: true,
        })
    }

    /// Prices `loaded` at these prices (`Self::pricing_for`'s rule).
    pub fn apply(&self, loaded: &mut Loaded) {
        if let Some(pricing) = self.pricing_for(&loaded.statement.predicate) {
            loaded.statement.predicate.pricing = Some(pricing);
        }
    }

    /// `loaded` priced at these prices: a copy where they apply, else `loaded` itself.
    pub fn priced<'a>(&self, loaded: &'a Loaded) -> Cow<'a, Loaded> {
        match self.pricing_for(&loaded.statement.predicate) {
            None => Cow::Borrowed(loaded),
            Some(pricing) => {
                let mut copy = loaded.clone();
                copy.statement.predicate.pricing = Some(pricing);
                Cow::Owned(copy)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;

    fn on(gpus: Option<(u32, &str)>) -> Loaded {
        let doc = Doc::vllm(gpus);
        Loaded::unchecked(sealed(predicate(&doc, vec![], vec![])))
    }

    fn priced(prices: &ReaderPrices, gpus: Option<(u32, &str)>) -> Option<Pricing> {
        let mut loaded = on(gpus);
        prices.apply(&mut loaded);
        loaded.statement.predicate.pricing
    }

    #[test]
    fn each_gpu_takes_the_first_price_that_names_it_else_the_unnamed_one() {
        let prices =
            ReaderPrices::parse("h100=2.49 USD, H200 = $3.10, 1.5 USD", "0.12 EUR").unwrap();
        let h100 = priced(&prices, Some((8, "NVIDIA H100 80GB HBM3"))).unwrap();
        assert_eq!(h100.gpu_hour.unwrap().to_string(), "2.49 USD");
        assert_eq!(h100.kwh.unwrap().to_string(), "0.12 EUR");
        assert!(h100.readers);
        let h200 = priced(&prices, Some((1, "NVIDIA H200"))).unwrap();
        assert_eq!(h200.gpu_hour.unwrap().to_string(), "3.1 USD");
        let other = priced(&prices, Some((2, "NVIDIA A100-SXM4-80GB"))).unwrap();
        assert_eq!(other.gpu_hour.unwrap().to_string(), "1.5 USD");
        // No GPU listed: the unnamed price still applies (the cost needs a GPU count, and
        // says so); the kWh price too.
        assert!(priced(&prices, None).unwrap().gpu_hour.is_some());
    }

    #[test]
    fn a_price_for_other_gpus_leaves_the_publishers_and_no_price_changes_nothing() {
        let prices = ReaderPrices::parse("H200=3 USD", "").unwrap();
        let mut loaded = on(Some((8, "NVIDIA H100")));
        let publishers = Pricing {
            gpu_hour: Some(Price::parse("2 USD", "x").unwrap()),
            kwh: None,
            readers: false,
        };
        loaded.statement.predicate.pricing = Some(publishers.clone());
        prices.apply(&mut loaded);
        assert_eq!(
            loaded.statement.predicate.pricing.as_ref(),
            Some(&publishers)
        );
        // A price that applies replaces all the publisher's: one party's prices, never a mix.
        ReaderPrices::parse("", "0.2 USD")
            .unwrap()
            .apply(&mut loaded);
        let readers = loaded.statement.predicate.pricing.clone().unwrap();
        assert_eq!(readers.gpu_hour, None);
        assert!(readers.kwh.is_some() && readers.readers);
        let untouched = on(Some((8, "NVIDIA H100")));
        let mut same = untouched.clone();
        ReaderPrices::parse(" ", "").unwrap().apply(&mut same);
        assert_eq!(same, untouched);
    }

    #[test]
    fn a_bad_price_names_its_flag_and_entry() {
        for (gpu, kwh, says) in [
            ("H100=2.49", "", "--gpu-hour-price \"2.49\""),
            ("=2 USD", "", "no GPU name"),
            ("H100=2 USD,x", "", "\"x\""),
            ("", "12", "--kwh-price"),
            ("-2 USD", "", "positive"),
            ("H100=2,49 EUR", "", "\"H100=2,49 EUR\": a decimal comma?"),
            ("", "0,12 EUR", "decimal comma"),
        ] {
            let e = ReaderPrices::parse(gpu, kwh).unwrap_err();
            assert!(e.contains(says), "{gpu:?} {kwh:?}: {e}");
        }
    }
}
