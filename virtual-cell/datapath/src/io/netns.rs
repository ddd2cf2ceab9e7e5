//! Opening devices inside another network namespace: `setns` there, open, `setns` back.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::reason;

const NETNS_DIR: &str = "/run/netns";

/// Runs `open` with the calling thread in namespace `/run/netns/NAME`, then returns to its own namespace.
/// Sockets and TUN fds opened there stay bound to that namespace.
pub fn within<T>(name: &str, open: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let own =
        File::open("/proc/thread-self/ns/net").map_err(|e| format!("/proc/thread-self/ns/net: {}", reason(&e)))?;
    let path = Path::new(NETNS_DIR).join(name);
    let target = File::open(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("network namespace {name} does not exist ({} not found)", path.display())
        }
        _ => format!("{}: {}", path.display(), reason(&e)),
    })?;
    enter(&target).map_err(|e| format!("cannot enter network namespace {name}: {e}"))?;
    let result = open();
    if let Err(e) = enter(&own) {
        // Continuing in the wrong namespace would open later devices in the wrong place.
        return Err(format!("cannot return to the datapath's own network namespace: {e}"));
    }
    result
}

fn enter(namespace: &File) -> Result<(), String> {
    // SAFETY: plain system call on a namespace fd we hold.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(reason(&std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The index of interface `ifname` in the calling thread's namespace, if it exists.
pub fn ifindex(ifname: &str) -> Option<u32> {
    let name = std::ffi::CString::new(ifname).ok()?;
    // SAFETY: valid NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}
