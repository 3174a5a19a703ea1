//! Replays of a trace against one policy: saturation (arrivals only, the FGD
//! paper's protocol) and time (arrivals, departures and a FIFO queue).

mod experiment;
pub mod saturation;
pub mod time;

pub use experiment::Experiment;
