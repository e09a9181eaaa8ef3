//! The formats a spec names: which HTTP client and clock measure the streams, a trace's and
//! a dataset's layout, the encoding and size of seeded images. The load generator reads and
//! writes them (`loadgen::client`, `trace`, `dataset`, `images`); here they are names.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// Which HTTP client carries the token streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum HttpClient {
    /// The lean HTTP/1.1 reader for `http://` targets, reqwest for `https://`.
    #[default]
    Auto,
    /// reqwest (hyper) for every stream.
    Reqwest,
}

/// What stamps a token event's arrival on the lean client's streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TokenClock {
    /// The kernel, as the bytes reached the socket (Linux `SO_TIMESTAMPING`, software receive
    /// stamps), whenever it gives one; the read's return otherwise.
    #[default]
    Kernel,
    /// The return of the read that got the bytes: late by however long the runner's thread
    /// took to wake and read.
    Read,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// JSONL with `timestamp` (ms), `input_length`, `output_length` and `hash_ids`.
    Mooncake,
    /// CSV or JSONL of timestamp, input and output lengths (the Azure trace layout).
    Timestamped,
}

impl TraceFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Timestamped => "timestamped",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// One JSON object a line: `prompt` (or `text`), optionally `output_tokens` (or
    /// `max_tokens`, `output_len`).
    Jsonl,
    /// A JSON array of `{"conversations": [{"from": "human", "value": …}, {"from": "gpt", …}]}`:
    /// the first human turn is the prompt, the reply's token count its output length.
    Sharegpt,
}

impl DatasetFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetFormat::Jsonl => "jsonl",
            DatasetFormat::Sharegpt => "sharegpt",
        }
    }
}

/// Largest width or height accepted, generated or read (vision encoders resize far below it).
pub const MAX_SIDE: u32 = 8192;

/// An image's encoding (`--data image_format=png|jpeg`; `jpg` is taken for `jpeg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    Png,
    #[value(alias = "jpg")]
    #[serde(alias = "jpg")]
    Jpeg,
}

impl ImageFormat {
    /// `png` or `jpeg`, as flags and records spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
        }
    }

    /// `image/png` or `image/jpeg`.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// `512x512` (or `512×512`, `512X512`): width and height, each 1 to [`MAX_SIDE`].
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X', '×'])
        .ok_or_else(|| format!("{text:?} is not WIDTHxHEIGHT (e.g. 512x512)"))?;
    let side = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_SIDE).contains(n))
            .ok_or_else(|| {
                format!("{text:?}: each side must be a whole number of pixels, 1 to {MAX_SIDE}")
            })
    };
    Ok((side(w)?, side(h)?))
}
