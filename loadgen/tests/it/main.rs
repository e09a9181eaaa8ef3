//! The load generator against the simulator, whose timeline is the truth: what each
//! profile and workload measures, checked against what the server did. One test binary:
//! two would compile and link the same server, runtime and client twice.

mod common;

mod agentic;
mod capacity;
mod known_answers;
mod lora;
mod speculative;
mod structured;
mod tool_calls;
mod workloads;
