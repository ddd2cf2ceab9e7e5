//! The relay engine: worker threads, each with its own epoll and its own share of the flows, and the queue
//! of events for the proxy (data for controlled flows, ends of flows), signalled through one eventfd the
//! proxy's event loop watches.
//!
//! Each worker's flows sit behind one mutex, taken per flow by the worker while it services the flow and by
//! the proxy's thread while it grants, reads counters or changes a flow (never for a copy: the worker moves
//! the bytes). A flow id is
//! `slot << 8 | worker`; a slot is reused only after the proxy removed the flow.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::flow::{Flow, Notices, Side};
use crate::sys;

pub const EVENT_DATA: u32 = 1;
pub const EVENT_CLOSED: u32 = 2;
pub const MAX_WORKERS: usize = 255;

const WAKE_TOKEN: u64 = u64::MAX;
const EPOLL_BATCH: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Event {
    pub flow: u64,
    pub kind: u32,
    pub padding: u32,
}

/// A flow's counters, bytes; `flags` bits: FLAG_*.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct FlowInfo {
    pub down_buffered: u64,
    pub down_received: u64,
    pub down_sent: u64,
    pub up_buffered: u64,
    pub up_received: u64,
    pub up_sent: u64,
    pub flags: u64,
}

pub const FLAG_CLOSED: u64 = 1;
pub const FLAG_RESET: u64 = 2;
pub const FLAG_DOWN_EOF: u64 = 4;
pub const FLAG_UP_EOF: u64 = 8;
pub const FLAG_UNKNOWN: u64 = 16; // no such flow

struct Events {
    queue: Mutex<Vec<Event>>,
    fd: RawFd,
}

impl Events {
    fn emit(&self, flow: u64, notices: Notices) {
        if !(notices.data || notices.closed) {
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let was_empty = queue.is_empty();
        for (happened, kind) in [(notices.data, EVENT_DATA), (notices.closed, EVENT_CLOSED)] {
            if happened {
                queue.push(Event { flow, kind, padding: 0 });
            }
        }
        if was_empty {
            sys::eventfd_signal(self.fd);
        }
    }
}

#[derive(Default)]
struct Slab {
    flows: Vec<Option<Flow>>,
    free: Vec<usize>,
    kicked: Vec<usize>, // flows the proxy's thread left with work to do
}

struct Worker {
    index: usize,
    epoll: RawFd,
    wake: RawFd,
    stop: AtomicBool,
    slab: Mutex<Slab>,
}

impl Worker {
    fn lock(&self) -> MutexGuard<'_, Slab> {
        self.slab.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn id(&self, slot: usize) -> u64 {
        ((slot as u64) << 8) | self.index as u64
    }

    fn run(&self, events: &Events) {
        let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; EPOLL_BATCH];
        let mut busy: Vec<usize> = Vec::new();
        while !self.stop.load(Ordering::Acquire) {
            let timeout = if busy.is_empty() { -1 } else { 0 };
            // SAFETY: `ready` has room for EPOLL_BATCH events.
            let count = unsafe { libc::epoll_wait(self.epoll, ready.as_mut_ptr(), EPOLL_BATCH as i32, timeout) };
            if count < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            // the lock is taken per flow, so the proxy's thread never waits for a whole batch
            let mut still_busy = std::mem::take(&mut self.lock().kicked);
            still_busy.append(&mut busy);
            let mut serviced = Vec::with_capacity(count as usize + still_busy.len());
            for event in &ready[..count as usize] {
                let token = event.u64;
                if token == WAKE_TOKEN {
                    sys::eventfd_clear(self.wake);
                    continue;
                }
                let slot = (token >> 1) as usize;
                let side = if token & 1 == 0 { Side::Ue } else { Side::Server };
                serviced.push((slot, Some((side, event.events))));
            }
            serviced.extend(still_busy.drain(..).map(|slot| (slot, None)));
            for (slot, event) in serviced {
                let mut slab = self.lock();
                if let Some(Some(flow)) = slab.flows.get_mut(slot) {
                    let mut notices = Notices::default();
                    match event {
                        Some((side, mask)) => flow.on_event(side, mask, &mut notices),
                        None => flow.service(&mut notices),
                    }
                    if flow.busy {
                        still_busy.push(slot);
                    }
                    events.emit(self.id(slot), notices);
                }
            }
            still_busy.sort_unstable();
            still_busy.dedup();
            busy = still_busy;
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        sys::close(self.epoll);
        sys::close(self.wake);
    }
}

pub struct Engine {
    workers: Vec<Arc<Worker>>,
    threads: Vec<JoinHandle<()>>,
    events: Arc<Events>,
    next: AtomicUsize,
}

impl Engine {
    pub fn new(workers: usize) -> io::Result<Self> {
        let count = workers.clamp(1, MAX_WORKERS);
        let events = Arc::new(Events { queue: Mutex::new(Vec::new()), fd: sys::eventfd()? });
        let mut engine = Self { workers: Vec::new(), threads: Vec::new(), events, next: AtomicUsize::new(0) };
        for index in 0..count {
            let epoll = sys::epoll_create()?;
            let wake = match sys::eventfd() {
                Ok(fd) => fd,
                Err(error) => {
                    sys::close(epoll);
                    return Err(error);
                }
            };
            let worker = Arc::new(Worker { index, epoll, wake, stop: AtomicBool::new(false), slab: Mutex::default() });
            sys::epoll_add(epoll, wake, WAKE_TOKEN)?;
            let (running, events) = (Arc::clone(&worker), Arc::clone(&engine.events));
            let thread =
                std::thread::Builder::new().name(format!("rnf-relay-{index}")).spawn(move || running.run(&events))?;
            engine.workers.push(worker);
            engine.threads.push(thread);
        }
        Ok(engine)
    }

    /// The eventfd that becomes readable when `events` has something.
    pub fn notify_fd(&self) -> RawFd {
        self.events.fd
    }

    pub fn add(
        &self,
        ue: RawFd,
        server: RawFd,
        pipe_bytes: usize,
        notsent_limit: usize,
        controlled: bool,
        held: bool,
    ) -> io::Result<u64> {
        let mut flow = Flow::new(ue, server, pipe_bytes, notsent_limit, controlled, held)?;
        let worker = &self.workers[self.next.fetch_add(1, Ordering::Relaxed) % self.workers.len()];
        let mut slab = worker.lock();
        let slot = slab.free.pop().unwrap_or_else(|| {
            slab.flows.push(None);
            slab.flows.len() - 1
        });
        if let Err(error) = flow.register(worker.epoll, (slot as u64) << 1) {
            slab.free.push(slot);
            return Err(error);
        }
        slab.flows[slot] = Some(flow);
        Ok(worker.id(slot))
    }

    /// Run `action` on flow `id` under its worker's lock, then queue what it reported; None when unknown.
    fn with_flow<T>(&self, id: u64, action: impl FnOnce(&mut Flow, &mut Notices) -> T) -> Option<T> {
        let worker = self.workers.get((id & 0xff) as usize)?;
        let mut slab = worker.lock();
        let flow = slab.flows.get_mut((id >> 8) as usize)?.as_mut()?;
        let mut notices = Notices::default();
        let result = action(flow, &mut notices);
        let busy = flow.busy;
        self.events.emit(id, notices);
        if busy {
            // more to move than one service does, or a grant to spend: the worker carries on (one wake-up
            // for all the flows kicked before it looks)
            if slab.kicked.is_empty() {
                sys::eventfd_signal(worker.wake);
            }
            slab.kicked.push((id >> 8) as usize);
        }
        Some(result)
    }

    pub fn configure(&self, id: u64, limit: usize, held: bool, controlled: bool) -> bool {
        self.with_flow(id, |flow, notices| flow.configure(limit, held, controlled, notices)).is_some()
    }

    /// Controlled flows: let up to `limit` more bytes leave toward the UE; the bytes granted.
    pub fn grant(&self, id: u64, limit: usize) -> usize {
        self.with_flow(id, |flow, _| flow.grant(limit)).unwrap_or(0)
    }

    pub fn info(&self, id: u64) -> FlowInfo {
        self.with_flow(id, |flow, _| {
            flow.looked();
            let mut flags = 0;
            for (set, flag) in [
                (flow.closed, FLAG_CLOSED),
                (flow.reset, FLAG_RESET),
                (flow.down.eof, FLAG_DOWN_EOF),
                (flow.up.eof, FLAG_UP_EOF),
            ] {
                if set {
                    flags |= flag;
                }
            }
            FlowInfo {
                down_buffered: flow.down.buffered as u64,
                down_received: flow.down.received,
                down_sent: flow.down.sent,
                up_buffered: flow.up.buffered as u64,
                up_received: flow.up.received,
                up_sent: flow.up.sent,
                flags,
            }
        })
        .unwrap_or(FlowInfo { flags: FLAG_UNKNOWN, ..FlowInfo::default() })
    }

    /// Flows with bytes waiting in their downlink pipe, not granted yet: (index in `ids`, bytes) into `out`;
    /// the number written. Looking re-arms each flow's data event.
    pub fn demand(&self, ids: &[u64], out: &mut [(u32, u64)]) -> usize {
        let mut count = 0;
        for (index, id) in ids.iter().enumerate() {
            let buffered = self.with_flow(*id, |flow, _| {
                flow.looked();
                if flow.closed { 0 } else { flow.ungranted() }
            });
            if let Some(buffered @ 1..) = buffered {
                if count < out.len() {
                    out[count] = (index as u32, buffered as u64);
                    count += 1;
                }
            }
        }
        count
    }

    /// What an open flow holds toward the UE past the proxy's decision: the UE socket's SIOCOUTQ (in flight
    /// and unsent) or SIOCOUTQNSD (unsent), plus the bytes granted that are still in the pipe.
    pub fn queued(&self, id: u64, unsent_only: bool) -> usize {
        let request = if unsent_only { sys::SIOCOUTQNSD } else { sys::SIOCOUTQ };
        self.with_flow(
            id,
            |flow, _| {
                if flow.closed { 0 } else { sys::ioctl_int(flow.ue, request).unwrap_or(0) + flow.credit }
            },
        )
        .unwrap_or(0)
    }

    /// The proxy is done with the flow: stop relaying if it still does, and free its slot.
    pub fn remove(&self, id: u64) {
        let Some(worker) = self.workers.get((id & 0xff) as usize) else { return };
        let mut slab = worker.lock();
        let slot = (id >> 8) as usize;
        if let Some(mut flow) = slab.flows.get_mut(slot).and_then(Option::take) {
            flow.shut_down(&mut Notices::default());
            slab.free.push(slot);
        }
    }

    /// Take up to `out.len()` queued events; clears the eventfd first, so a later event signals again.
    pub fn events(&self, out: &mut [Event]) -> usize {
        sys::eventfd_clear(self.events.fd);
        let mut queue = self.events.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = queue.len().min(out.len());
        out[..count].copy_from_slice(&queue[..count]);
        queue.drain(..count);
        if !queue.is_empty() {
            sys::eventfd_signal(self.events.fd);
        }
        count
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        for worker in &self.workers {
            worker.stop.store(true, Ordering::Release);
            sys::eventfd_signal(worker.wake);
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        sys::close(self.events.fd);
    }
}
