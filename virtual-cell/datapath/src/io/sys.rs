//! Clocks, epoll, timerfd, signalfd and process settings.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(result) }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC`, ns: the TTI clock and the delay lines.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME`, ns since the epoch: report and packet-log time stamps.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: plain system call; the result is a new fd we own.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity],
        })
    }

    /// Watches `fd` for input (level-triggered); `token` comes back in `wait`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: `event` outlives the call.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) }).map(|_| ())
    }

    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL since Linux 2.6.9.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) })
            .map(|_| ())
    }

    /// Waits for readiness (forever when `timeout_ms` is -1) and calls `ready` with each token.
    pub fn wait(&mut self, timeout_ms: i32, mut ready: impl FnMut(u64)) -> io::Result<()> {
        // SAFETY: `events` has room for `len` entries.
        let n = unsafe {
            libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), self.events.len() as i32, timeout_ms)
        };
        if n < 0 {
            let error = io::Error::last_os_error();
            return if error.raw_os_error() == Some(libc::EINTR) { Ok(()) } else { Err(error) };
        }
        for event in &self.events[..n as usize] {
            ready(event.u64);
        }
        Ok(())
    }
}

/// An absolute `CLOCK_MONOTONIC` timer.
pub struct Timer {
    fd: OwnedFd,
    armed: Option<u64>,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain system call; the result is a new fd we own.
        let fd = check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(Timer { fd: unsafe { OwnedFd::from_raw_fd(fd) }, armed: None })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fires at `deadline_ns` (monotonic); a time in the past fires at once. Re-arming to the armed time
    /// is skipped.
    pub fn arm(&mut self, deadline_ns: u64) -> io::Result<()> {
        if self.armed == Some(deadline_ns) {
            return Ok(());
        }
        let deadline_ns = deadline_ns.max(1); // 0 would disarm
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is valid; the old value is not requested.
        check(unsafe {
            libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        })?;
        self.armed = Some(deadline_ns);
        Ok(())
    }

    /// Clears the expiration after it fired.
    pub fn acknowledge(&mut self) {
        let mut ticks = 0u64;
        // SAFETY: reads 8 bytes into `ticks`; EAGAIN (nothing expired) is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), &mut ticks as *mut u64 as *mut libc::c_void, 8) };
        self.armed = None;
    }
}

/// SIGTERM and SIGINT as a readable fd. Call `block_stop_signals` first, before any thread starts.
pub struct StopSignals {
    fd: OwnedFd,
}

fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before use.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Blocks SIGTERM and SIGINT in this thread and in threads it starts later, so only the signalfd sees them.
pub fn block_stop_signals() {
    let set = stop_set();
    // SAFETY: valid set; the old mask is not requested.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

impl StopSignals {
    pub fn new() -> io::Result<StopSignals> {
        let set = stop_set();
        // SAFETY: valid set; the result is a new fd we own.
        let fd = check(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
        Ok(StopSignals { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The pending signal's number, if any.
    pub fn take(&self) -> Option<u32> {
        let mut info = std::mem::MaybeUninit::<libc::signalfd_siginfo>::zeroed();
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: reads at most `size` bytes into `info`.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), info.as_mut_ptr() as *mut libc::c_void, size) };
        // SAFETY: the kernel wrote a whole siginfo when n == size; zeroed otherwise.
        (n as usize == size).then(|| unsafe { info.assume_init() }.ssi_signo)
    }
}

/// Asks the kernel for SIGTERM when the parent dies. False when the parent is already gone.
pub fn terminate_with_parent() -> bool {
    // SAFETY: plain system calls.
    unsafe {
        let parent = libc::getppid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
        parent != 1 && libc::getppid() == parent
    }
}

/// Timer slack of 1 ns: timerfd wake-ups as close to their deadline as the kernel can.
pub fn precise_timers() {
    // SAFETY: plain system call.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Threads that keep every CPU the process may run on from halting while the datapath runs: one per CPU, pinned
/// to it, at `SCHED_IDLE`, spinning until `stop`. Any other task that wakes on that CPU preempts its spinner at
/// once, so the spinners take time from no one in the guest. What they prevent is a halted vCPU: a virtual
/// machine's CPU that halts when idle is handed back to the host, and the timer that should wake the TTI loop
/// finds it 10-20 ms later when the host has run something else there meanwhile (docs/benchmarks.md).
pub fn keep_cpus_awake(stop: &Arc<AtomicBool>) -> io::Result<Vec<JoinHandle<()>>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid set of the size given, for the calling thread (0).
    check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) })?;
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: cpu < CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &allowed) })
        .collect();
    let mut spinners = Vec::with_capacity(cpus.len());
    for cpu in cpus {
        let stop = Arc::clone(stop);
        let spinner = std::thread::Builder::new().name(format!("rnf-cell-dp-awake{cpu}")).spawn(move || {
            // SAFETY: a zeroed cpu_set_t is a valid empty set; cpu < CPU_SETSIZE.
            let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(cpu, &mut one) };
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: valid set and param for the calling thread (0). Should either fail, the thread still spins
            // at the lowest priority the kernel gave it; SCHED_IDLE needs no privilege.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
                libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
            }
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })?;
        spinners.push(spinner);
    }
    Ok(spinners)
}

/// `SCHED_FIFO` at `priority` for the calling thread.
pub fn realtime(priority: u32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority as libc::c_int };
    // SAFETY: valid param for the calling thread (0).
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(|_| ())
}

/// Reads what is there on a readable fd without blocking the caller for long: 0 means end of file.
pub fn read_some(fd: RawFd, buffer: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buffer` is valid for `len` bytes.
    let n = unsafe { libc::read(fd, buffer.as_mut_ptr() as *mut libc::c_void, buffer.len()) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// Writes one whole packet (TUN semantics: one write, one packet).
pub fn write_packet(fd: RawFd, packet: &[u8]) -> io::Result<()> {
    // SAFETY: `packet` is valid for `len` bytes.
    let n = unsafe { libc::write(fd, packet.as_ptr() as *const libc::c_void, packet.len()) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}
