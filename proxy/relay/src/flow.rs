//! One split TCP connection: the socket toward the UE, the one toward the server, and a kernel pipe per
//! direction between them, moved by splice(2) without a copy through user space.
//!
//! Readiness is edge-triggered: a flag per socket and direction says "may have more", set by an epoll event
//! and cleared when an attempt meets EAGAIN. A flow is serviced (`service`) after every event and after
//! every change the proxy makes; it moves what it can until nothing progresses.
//!
//! The downlink (server to UE) either drains here, as far as the UE socket's unsent bytes stay under
//! `notsent_limit` (free mode, the kernel's congestion control decides), or only as far as the proxy granted
//! (`grant`, controlled mode: the controller's window or quota). Either way the bytes move in the worker's
//! thread: a grant is a credit the worker spends, never a copy in the proxy's thread. The uplink always
//! drains freely. End of file becomes a FIN on the other side once its pipe is empty; an error on either side
//! resets both.

use std::io;
use std::os::fd::RawFd;

use crate::sys;

/// Rounds of `step` per service before the flow yields to the others (it is serviced again at once).
const ROUNDS: usize = 8;

/// One direction: `source` socket -> pipe -> `sink` socket.
pub struct Direction {
    read_end: RawFd,
    write_end: RawFd,
    pub capacity: usize,
    pub limit: usize, // bytes this direction may hold in its pipe
    pub buffered: usize,
    pub received: u64,
    pub sent: u64,
    pub eof: bool,  // the source sent its FIN
    pub shut: bool, // the FIN went on to the sink
}

enum Fill {
    Moved,
    Eof,
    WouldBlock,
}

impl Direction {
    fn new(capacity: usize) -> io::Result<Self> {
        let (read_end, write_end, capacity) = sys::pipe(capacity)?;
        Ok(Self {
            read_end,
            write_end,
            capacity,
            limit: capacity,
            buffered: 0,
            received: 0,
            sent: 0,
            eof: false,
            shut: false,
        })
    }

    fn fill(&mut self, source: RawFd) -> io::Result<Fill> {
        let room = self.limit.saturating_sub(self.buffered);
        match sys::splice(source, self.write_end, room) {
            Ok(0) => {
                self.eof = true;
                Ok(Fill::Eof)
            }
            Ok(moved) => {
                self.buffered += moved;
                self.received += moved as u64;
                Ok(Fill::Moved)
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(Fill::WouldBlock),
            Err(error) => Err(error),
        }
    }

    /// Up to `limit` bytes to `sink`; None when the sink took nothing (its buffer is full).
    fn drain(&mut self, sink: RawFd, limit: usize) -> io::Result<Option<usize>> {
        let want = self.buffered.min(limit);
        if want == 0 {
            return Ok(Some(0));
        }
        match sys::splice(self.read_end, sink, want) {
            Ok(moved) => {
                self.buffered -= moved;
                self.sent += moved as u64;
                Ok(Some(moved))
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn finished(&self) -> bool {
        self.eof && self.buffered == 0
    }

    fn close(&mut self) {
        for fd in [&mut self.read_end, &mut self.write_end] {
            if *fd >= 0 {
                sys::close(*fd);
                *fd = -1;
            }
        }
    }
}

impl Drop for Direction {
    fn drop(&mut self) {
        self.close();
    }
}

/// Which socket of a flow an epoll event is for (the low bit of its token).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ue = 0,
    Server = 1,
}

/// What the proxy must hear about after an operation on a flow.
#[derive(Default, Clone, Copy)]
pub struct Notices {
    pub data: bool,   // controlled flow: new data since the proxy last looked
    pub closed: bool, // the flow ended (both FINs carried, or reset)
}

pub struct Flow {
    pub ue: RawFd,
    pub server: RawFd,
    pub down: Direction,
    pub up: Direction,
    epoll: RawFd,
    token: u64, // epoll token of the UE socket; the server socket's is token | 1
    ue_in: bool,
    ue_out: bool,
    server_in: bool,
    server_out: bool,
    pub held: bool,       // the proxy holds the server back (link stall)
    pub controlled: bool, // the proxy says how much of the downlink leaves (`grant`)
    notsent_limit: usize, // free mode: unsent bytes kept in the UE socket
    unsent: usize,        // free mode: an upper bound of the UE socket's unsent bytes
    data_armed: bool,     // controlled: tell the proxy about the next data
    pub credit: usize,    // controlled: bytes granted, still in the pipe (at most `down.buffered`)
    pub closed: bool,
    pub reset: bool, // ended by an error, carried as RST
    pub busy: bool,  // the last service stopped while still progressing: service it again soon
}

impl Flow {
    pub fn new(
        ue: RawFd,
        server: RawFd,
        pipe_bytes: usize,
        notsent_limit: usize,
        controlled: bool,
        held: bool,
    ) -> io::Result<Self> {
        Ok(Self {
            ue,
            server,
            down: Direction::new(pipe_bytes)?,
            up: Direction::new(pipe_bytes)?,
            epoll: -1,
            token: 0,
            ue_in: false,
            ue_out: false,
            server_in: false,
            server_out: false,
            held,
            controlled,
            notsent_limit,
            unsent: 0,
            data_armed: true,
            credit: 0,
            closed: false,
            reset: false,
            busy: false,
        })
    }

    /// Register both sockets with `epoll`; the first events report what is ready already.
    pub fn register(&mut self, epoll: RawFd, token: u64) -> io::Result<()> {
        self.epoll = epoll;
        self.token = token;
        sys::epoll_add(epoll, self.ue, token)?;
        if let Err(error) = sys::epoll_add(epoll, self.server, token | 1) {
            sys::epoll_remove(epoll, self.ue);
            return Err(error);
        }
        Ok(())
    }

    /// An epoll event for one of the sockets, then whatever it allows.
    pub fn on_event(&mut self, side: Side, events: u32, notices: &mut Notices) {
        if self.closed {
            return;
        }
        let readable = events & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        let writable = events & (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        let fd = if side == Side::Ue { self.ue } else { self.server };
        if events & libc::EPOLLERR as u32 != 0 {
            let error = sys::socket_error(fd);
            if error != 0 {
                self.abort(notices);
                return;
            }
        }
        match side {
            Side::Ue => {
                self.ue_in |= readable;
                self.ue_out |= writable;
            }
            Side::Server => {
                self.server_in |= readable;
                self.server_out |= writable;
            }
        }
        self.service(notices)
    }

    /// Move what can be moved, for a few rounds; `busy` says whether it yielded with more to do.
    pub fn service(&mut self, notices: &mut Notices) {
        self.busy = false;
        for _ in 0..ROUNDS {
            match self.step(notices) {
                Ok(true) if !self.closed => {}
                Ok(_) => return,
                Err(_) => {
                    self.abort(notices);
                    return;
                }
            }
        }
        self.busy = true;
    }

    fn step(&mut self, notices: &mut Notices) -> io::Result<bool> {
        if self.closed {
            return Ok(false);
        }
        let mut progress = false;
        // uplink: UE -> pipe -> server, freely
        if self.ue_in && !self.up.eof && self.up.buffered < self.up.limit {
            match self.up.fill(self.ue)? {
                Fill::Moved | Fill::Eof => progress = true,
                // with bytes in the pipe, EAGAIN may mean a full pipe rather than an empty socket: try again
                // after the next drain, which settles it
                Fill::WouldBlock => self.ue_in = self.up.buffered > 0,
            }
        }
        if self.server_out && self.up.buffered > 0 {
            match self.up.drain(self.server, usize::MAX)? {
                Some(moved) => progress |= moved > 0,
                None => self.server_out = false,
            }
        }
        self.forward_fin(false, notices)?;
        // downlink: server -> pipe, unless held
        if self.server_in && !self.held && !self.down.eof && self.down.buffered < self.down.limit {
            match self.down.fill(self.server)? {
                Fill::Moved => {
                    progress = true;
                    if self.controlled && self.data_armed {
                        self.data_armed = false;
                        notices.data = true;
                    }
                }
                Fill::Eof => progress = true,
                Fill::WouldBlock => self.server_in = self.down.buffered > 0,
            }
        }
        if self.ue_out && self.down.buffered > 0 {
            progress |= if self.controlled { self.drain_credit()? } else { self.drain_free()? };
        }
        self.forward_fin(true, notices)?;
        Ok(progress)
    }

    /// Free mode: toward the UE as far as its socket's unsent bytes stay under the limit.
    fn drain_free(&mut self) -> io::Result<bool> {
        // `unsent` only overestimates (the kernel sends): ask the kernel only when it says the socket is full
        if self.unsent + self.down.buffered > self.notsent_limit {
            self.unsent = sys::ioctl_int(self.ue, sys::SIOCOUTQNSD)?;
        }
        let room = self.notsent_limit.saturating_sub(self.unsent);
        if room == 0 {
            self.wait_writable();
            return Ok(false);
        }
        match self.down.drain(self.ue, room)? {
            Some(moved) => {
                self.unsent += moved;
                Ok(moved > 0)
            }
            None => {
                self.ue_out = false;
                Ok(false)
            }
        }
    }

    /// Controlled mode: what the proxy granted, as far as the UE socket takes it.
    fn drain_credit(&mut self) -> io::Result<bool> {
        match self.down.drain(self.ue, self.credit)? {
            Some(moved) => {
                self.credit -= moved;
                Ok(moved > 0)
            }
            None => {
                self.ue_out = false;
                Ok(false)
            }
        }
    }

    fn wait_writable(&mut self) {
        self.ue_out = false;
        sys::epoll_rearm(self.epoll, self.ue, self.token);
    }

    /// Bytes in the pipe not granted yet: what the proxy may still grant.
    pub fn ungranted(&self) -> usize {
        self.down.buffered - self.credit
    }

    /// Controlled mode: let up to `limit` more bytes of the pipe leave toward the UE; the bytes granted. The
    /// worker moves them (`busy` asks the engine to wake it), as fast as the UE socket takes them.
    pub fn grant(&mut self, limit: usize) -> usize {
        if self.closed || !self.controlled {
            return 0;
        }
        self.data_armed = true;
        let granted = limit.min(self.ungranted());
        self.credit += granted;
        self.busy |= granted > 0;
        granted
    }

    /// New settings from the proxy: the pipe limit (the connection's buffer share), hold, mode.
    pub fn configure(&mut self, limit: usize, held: bool, controlled: bool, notices: &mut Notices) {
        self.down.limit = limit.clamp(1, self.down.capacity);
        self.held = held;
        if controlled != self.controlled {
            self.controlled = controlled;
            self.data_armed = true;
            self.credit = 0;
            if !controlled {
                self.unsent = self.notsent_limit; // unknown after the proxy's own sends: ask the kernel
                self.wait_writable();
            }
        }
        self.service(notices);
    }

    /// The proxy looked at the flow: tell it about the next data.
    pub fn looked(&mut self) {
        self.data_armed = true;
    }

    fn forward_fin(&mut self, downlink: bool, notices: &mut Notices) -> io::Result<()> {
        let (direction, sink) = if downlink { (&mut self.down, self.ue) } else { (&mut self.up, self.server) };
        if direction.shut || !direction.finished() {
            return Ok(());
        }
        direction.shut = true;
        sys::shutdown_write(sink)?;
        if self.down.shut && self.up.shut {
            self.shut_down(notices);
        }
        Ok(())
    }

    /// An error on one side (a reset, a timeout, a vanished peer): both sockets will close with a RST.
    fn abort(&mut self, notices: &mut Notices) {
        if self.closed {
            return;
        }
        sys::reset_on_close(self.ue);
        sys::reset_on_close(self.server);
        self.reset = true;
        self.shut_down(notices);
    }

    /// Stop relaying: deregister, free the pipes. The proxy owns the sockets and closes them.
    pub fn shut_down(&mut self, notices: &mut Notices) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.busy = false;
        if self.epoll >= 0 {
            sys::epoll_remove(self.epoll, self.ue);
            sys::epoll_remove(self.epoll, self.server);
        }
        self.down.close();
        self.up.close();
        notices.closed = true;
    }
}
