//! The engine under test, started by the runner: a [`recipe`] says how (command or
//! container image, readiness, version, metrics, prefix-cache reset), [`launch`] starts,
//! watches and stops it with nothing left behind, [`model_id`] names the model it serves,
//! and [`help`] reads the flags it takes. Where it sits: before the load on the data path
//! (spec → **engine** → load → records → …); a server started by hand skips it (`runner run
//! --target`).

pub mod help;
pub mod launch;
pub mod model_id;
pub mod recipe;
pub mod version;
