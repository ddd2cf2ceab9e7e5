//! Thin wrappers of the system calls the relay makes: splice, pipes, epoll, ioctls, socket options.

use std::io;
use std::os::fd::RawFd;

pub const SIOCOUTQ: libc::c_ulong = 0x5411; // TIOCOUTQ: sent and unacknowledged, plus not yet sent
pub const SIOCOUTQNSD: libc::c_ulong = 0x894B; // not yet sent

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(result) }
}

/// Move up to `len` bytes from `from` to `to`, one of which is a pipe; Ok(0) is end of file.
pub fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
    // SAFETY: null offsets are allowed for sockets and pipes; the descriptors are owned by the caller.
    let moved = unsafe { libc::splice(from, std::ptr::null_mut(), to, std::ptr::null_mut(), len, flags) };
    if moved < 0 { Err(io::Error::last_os_error()) } else { Ok(moved as usize) }
}

/// A non-blocking pipe of about `capacity` bytes: (read end, write end, the capacity the kernel granted).
pub fn pipe(capacity: usize) -> io::Result<(RawFd, RawFd, usize)> {
    let mut ends = [0 as libc::c_int; 2];
    // SAFETY: `ends` has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    let capacity = libc::c_int::try_from(capacity).unwrap_or(libc::c_int::MAX);
    // SAFETY: F_SETPIPE_SZ takes an int argument.
    match check(unsafe { libc::fcntl(ends[1], libc::F_SETPIPE_SZ, capacity) }) {
        Ok(granted) => Ok((ends[0], ends[1], granted as usize)),
        Err(error) => {
            close(ends[0]);
            close(ends[1]);
            Err(error)
        }
    }
}

pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and never uses it again.
    unsafe { libc::close(fd) };
}

pub fn eventfd() -> io::Result<RawFd> {
    // SAFETY: plain system call.
    check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })
}

pub fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64; a full counter (EAGAIN) already means "signalled".
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

pub fn eventfd_clear(fd: RawFd) {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64; EAGAIN means it was clear.
    unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
}

pub fn epoll_create() -> io::Result<RawFd> {
    // SAFETY: plain system call.
    check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })
}

fn epoll_ctl(epoll: RawFd, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: token };
    // SAFETY: `event` lives across the call.
    check(unsafe { libc::epoll_ctl(epoll, op, fd, &mut event) }).map(|_| ())
}

/// Edge-triggered interest in everything: readiness is tracked by the flow, not re-armed per event.
pub const INTEREST: u32 = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;

pub fn epoll_add(epoll: RawFd, fd: RawFd, token: u64) -> io::Result<()> {
    epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, INTEREST, token)
}

/// Re-poll `fd`: an event is queued now if it is ready, and otherwise the socket is marked as waited for
/// (SOCK_NOSPACE), so the kernel wakes us when it becomes writable, TCP_NOTSENT_LOWAT included.
pub fn epoll_rearm(epoll: RawFd, fd: RawFd, token: u64) {
    let _ = epoll_ctl(epoll, libc::EPOLL_CTL_MOD, fd, INTEREST, token);
}

pub fn epoll_remove(epoll: RawFd, fd: RawFd) {
    let _ = epoll_ctl(epoll, libc::EPOLL_CTL_DEL, fd, 0, 0);
}

pub fn ioctl_int(fd: RawFd, request: libc::c_ulong) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    // SAFETY: these ioctls write one int.
    check(unsafe { libc::ioctl(fd, request, &mut value) })?;
    Ok(value.max(0) as usize)
}

pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain system call.
    check(unsafe { libc::shutdown(fd, libc::SHUT_WR) }).map(|_| ())
}

/// Make close() send a RST instead of a FIN (SO_LINGER with a zero timeout).
pub fn reset_on_close(fd: RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: passes a live struct of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// The pending error of a socket (SO_ERROR), which reading clears; 0 for none.
pub fn socket_error(fd: RawFd) -> i32 {
    let mut error: libc::c_int = 0;
    let mut size = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `error` and `size` live across the call.
    let result = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, (&mut error as *mut libc::c_int).cast(), &mut size)
    };
    if result < 0 { 0 } else { error }
}
