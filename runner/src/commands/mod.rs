//! One module per subcommand.

pub mod finalize;
pub mod keygen;
pub mod run;
pub mod sim;
pub mod synth;
pub mod trust;
pub mod verify;
