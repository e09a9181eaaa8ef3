//! One module per subcommand.

pub mod campaign;
pub mod export;
pub mod finalize;
pub mod gate;
pub mod import;
pub mod keygen;
pub mod log;
pub mod merge;
pub mod publish;
pub mod register;
pub mod report;
pub mod reproduce;
pub mod run;
pub mod serve;
pub mod shard;
pub mod sim;
pub mod synth;
pub mod trust;
pub mod verify;
pub mod verify_site;
pub mod witness;
