//! `rnf-cell-dp`, the virtual cell's per-packet path (INTERFACE.md).
//!
//! The pure parts (configuration, traces, RLC queues and their disciplines, scheduler, cell, delay lines, wired
//! link, reports) take time as an argument and are unit-tested; `io` holds the system calls and `datapath` the event loop
//! that joins them.

pub mod ackreg;
pub mod aqm;
pub mod cell;
pub mod clock;
pub mod config;
pub mod datapath;
pub mod delay;
pub mod ecn;
pub mod io;
pub mod report;
pub mod rlc;
pub mod scheduler;
pub mod trace;
pub mod uplink;
pub mod wired;
