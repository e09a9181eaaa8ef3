//! The column headings of the published tables provebench reproduces byte for byte (the
//! seeds): `report` writes them and `importers` recognises a table by them, so both read
//! them here.

/// The input × output grid of seeds 000–003.
pub const GRID_HEADINGS: [&str; 6] = [
    "Input Length",
    "Output Length",
    "Throughput (requests/s)",
    "Throughput (output token/s)",
    "Average latency per token (ms)",
    "Average latency per output token (ms)",
];

/// The sweep table of seed 004.
pub const SWEEP_HEADINGS: [&str; 6] = [
    "Benchmark",
    "Requests per Second",
    "Request Latency",
    "Time to First Token",
    "Inter Token Latency",
    "Output Token Throughput",
];
