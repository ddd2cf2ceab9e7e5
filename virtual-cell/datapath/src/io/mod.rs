//! The datapath's system calls: network namespaces, TUN devices, `AF_PACKET` sockets, epoll, timerfd,
//! signalfd and clocks. Thin wrappers; no datapath logic here.

pub mod netns;
pub mod packet;
pub mod sys;
pub mod tun;

use std::io;

/// The errno text without Rust's ` (os error N)` suffix.
pub fn reason(error: &io::Error) -> String {
    crate::config::io_reason(error)
}

/// Whether a failed read/write means "try again later" rather than a real error.
pub fn would_block(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR))
}
