//! One module per subcommand.

pub mod keygen;
pub mod synth;
pub mod trust;
pub mod verify;
