//! One module per subcommand.

pub mod keygen;
pub mod synth;
pub mod verify;
