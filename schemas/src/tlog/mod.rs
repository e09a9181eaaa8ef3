//! Transparency logs as C2SP specifies them: RFC 6962 Merkle trees and their proofs
//! ([`merkle`]), signed notes ([`note`]), checkpoints ([`checkpoint`]), the static tiles a
//! log is served as ([`tiles`]) and witnesses' cosignatures ([`cosignature`]). Pure functions,
//! the same natively and in wasm, for whatever appends to a log and whatever checks a place
//! in one.

pub mod merkle;
pub mod note;
pub mod checkpoint;
pub mod tiles;
pub mod cosignature;
