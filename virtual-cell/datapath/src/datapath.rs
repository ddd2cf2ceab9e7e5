//! The event loop: one thread, epoll over the TUN devices, the two `AF_PACKET` sockets, a timerfd (TTI
//! clock and delay lines), a signalfd and standard input; a second thread writes reports and the packet log.
//!
//! Each wake-up runs the TTIs that are due first, then reads a bounded batch from each ready device
//! (running due TTIs again in between, so reading never starves the TTI clock), then releases what the
//! delay lines and the wired link hold, and re-arms the timer for the next TTI or release.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};

use crate::aqm::Policy;
use crate::cell::{Cell, Delivery, UeParams};
use crate::clock::{Step, TtiClock};
use crate::config::Config;
use crate::delay::DelayLine;
use crate::io::packet::{PacketSocket, ReceiveBatch, send_all};
use crate::io::sys::{self, Epoll, StopSignals, Timer, monotonic_ns, read_some, realtime_ns, write_packet};
use crate::io::tun::Tun;
use crate::io::{netns, reason, would_block};
use crate::report::{LatenessHistogram, LogRecord, Summary, UeReport, WiredSummary};
use crate::rlc::{Limits, Sdu};
use crate::trace::Trace;
use crate::uplink;
use crate::wired::WiredLink;

const TOKEN_TIMER: u64 = 0;
const TOKEN_SIGNAL: u64 = 1;
const TOKEN_STDIN: u64 = 2;
const TOKEN_SGI: u64 = 3;
const TOKEN_WIRE_SERVER: u64 = 4;
const TOKEN_WIRE_CORE: u64 = 5;
const TOKEN_UE: u64 = 16;

/// Packets read from one device per wake-up before the loop looks at the TTI clock again.
const READ_BUDGET: usize = 32;
/// Packets released from one delay line per pass.
const RELEASE_BUDGET: usize = 32;
/// Messages (report batches, packet-log batches) waiting for the reporting thread.
const REPORT_QUEUE: usize = 1024;
/// Mixes the UE's index into the seed of its uplink's chained grants, a stream apart from its HARQ failures'.
const UPLINK_SEED: u64 = 0x9E6C_63D0_676A_9A99;
/// Packet-log records held back while the reporting thread is behind, before records are dropped.
const LOG_BACKLOG_MAX: usize = 1 << 20;
/// Packet-log records go to the reporting thread in batches: this many records, or every this many TTIs.
const LOG_BATCH_RECORDS: usize = 1024;
const LOG_BATCH_TTIS: u64 = 10;
/// Recycled packet buffers kept for reuse.
const POOL_MAX: usize = 8192;
/// Under `SCHED_FIFO`, after this long without blocking, the loop sleeps `REST_NS`: normal tasks that share its
/// CPU (often the UE's application, woken from our TUN writes) then run in short gaps, instead of the kernel
/// stopping the loop for up to 50 ms to run them (RT throttling / the fair deadline server) when it saturates.
const BUSY_MAX_NS: u64 = 1_000_000;
const REST_NS: u64 = 100_000;

/// Runs the datapath described by the configuration file until it is told to stop.
pub fn run(config_path: &Path) -> Result<(), String> {
    let parent_alive = sys::terminate_with_parent();
    let config = Config::load(config_path)?;
    let file = config_path.display();
    let mut ues = Vec::with_capacity(config.ues.len());
    let mut uplink_timing = Vec::with_capacity(config.ues.len());
    for (i, ue) in config.ues.iter().enumerate() {
        let trace = Trace::load(&ue.trace_file).map_err(|e| format!("{file}: ues[{i}].trace_file: {e}"))?;
        // SR occasions and replayed transmissions count from the clock's start, set when the loop starts
        let timing = uplink::Uplink::new(0, ue.uplink_sr_period_us * 1000, ue.uplink_delay_us * 1000).with_grants(
            ue.uplink_grant_period_us * 1000,
            ue.uplink_grant_chain,
            config.seed ^ (i as u64 + 1).wrapping_mul(UPLINK_SEED),
        );
        uplink_timing.push(match &ue.uplink_trace_file {
            Some(path) => timing.with_replay(
                uplink::OpportunityTrace::load(path).map_err(|e| format!("{file}: ues[{i}].uplink_trace_file: {e}"))?,
            ),
            None => timing,
        });
        let discipline =
            ue.queue_discipline.resolve(&format!("ues[{i}].queue_discipline")).map_err(|e| format!("{file}: {e}"))?;
        ues.push(UeParams {
            trace,
            limits: Limits {
                bytes: ue.queue_limit_bytes,
                sdus: ue.queue_limit_sdus,
                discard_ttis: ue.discard_timer_us.div_ceil(config.tti_us),
            },
            policy: Policy::new(discipline, config.tti_us * 1000),
            harq_bler: ue.harq_bler,
            harq_rtt_ttis: ue.harq_rtt_us.div_ceil(config.tti_us).max(1),
            ack_regulator: match &ue.ack_regulator {
                Some(regulator) => Some(
                    regulator
                        .resolve(&format!("ues[{i}].ack_regulator"), ue.queue_limit_bytes, config.tti_us)
                        .map_err(|e| format!("{file}: {e}"))?,
                ),
                None => None,
            },
            trace_starts_at_first_packet: ue.trace_starts_at_first_packet,
        });
    }
    let devices = Devices::open(&config).map_err(|e| format!("{file}: {e}"))?;
    let packet_log = match &config.packet_log {
        Some(path) => {
            Some(File::create(path).map_err(|e| format!("{file}: packet_log: {}: {}", path.display(), reason(&e)))?)
        }
        None => None,
    };

    let awake = Arc::new(AtomicBool::new(false));
    let spinners = if config.keep_cpus_awake {
        sys::keep_cpus_awake(&awake)
            .map_err(|e| format!("cannot start the threads that keep the CPUs awake: {}", reason(&e)))?
    } else {
        Vec::new()
    };
    let (sender, receiver) = sync_channel(REPORT_QUEUE);
    let logging = packet_log.is_some();
    let reporter = std::thread::Builder::new()
        .name("rnf-cell-dp-report".into())
        .spawn(move || write_reports(receiver, packet_log))
        .map_err(|e| format!("cannot start the reporting thread: {}", reason(&e)))?;
    // After the reporting thread started: it keeps the normal scheduler.
    let realtime = config.realtime_priority > 0
        && match sys::realtime(config.realtime_priority) {
            Ok(()) => true,
            Err(e) => {
                eprintln!(
                    "rnf-cell-dp: warning: realtime_priority {}: SCHED_FIFO refused ({}); running with the normal scheduler",
                    config.realtime_priority,
                    reason(&e)
                );
                false
            }
        };
    sys::precise_timers();

    let cell = Cell::new(config.scheduler, config.pf_window_ttis, config.report_period_ttis, config.seed, ues);
    let mut datapath = Datapath::new(&config, devices, cell, uplink_timing, sender, logging, realtime)?;
    if !parent_alive {
        datapath.stop = true;
    }
    let result = datapath.run();
    let summary = datapath.summary();
    datapath.finish(summary);
    drop(datapath);
    awake.store(true, Ordering::Relaxed);
    for spinner in spinners {
        spinner.join().map_err(|_| "a thread that kept a CPU awake failed".to_string())?;
    }
    reporter.join().map_err(|_| "the reporting thread failed".to_string())?;
    result
}

/// The devices the datapath attaches to, each opened in its namespace.
struct Devices {
    sgi: Tun,
    ues: Vec<Tun>,
    wire_server: PacketSocket,
    wire_core: PacketSocket,
}

impl Devices {
    fn open(config: &Config) -> Result<Devices, String> {
        let w = &config.wired;
        let (wire_server, wire_core) = open_in(&w.netns, "wired.netns", || {
            let server = PacketSocket::bind(&w.server_ifname)
                .map_err(|e| format!("wired.server_ifname: {e} in network namespace {}", w.netns))?;
            let core = PacketSocket::bind(&w.core_ifname)
                .map_err(|e| format!("wired.core_ifname: {e} in network namespace {}", w.netns))?;
            Ok((server, core))
        })?;
        let core = &config.core;
        let sgi = open_in(&core.netns, "core.netns", || {
            Tun::attach(&core.ifname).map_err(|e| format!("core.ifname: {e} in network namespace {}", core.netns))
        })?;
        let mut ues = Vec::with_capacity(config.ues.len());
        for (i, ue) in config.ues.iter().enumerate() {
            let tun = open_in(&ue.netns, &format!("ues[{i}].netns"), || {
                Tun::attach(&ue.ifname).map_err(|e| format!("ues[{i}].ifname: {e} in network namespace {}", ue.netns))
            })?;
            ues.push(tun);
        }
        Ok(Devices { sgi, ues, wire_server, wire_core })
    }
}

/// `netns::within`, with namespace errors named by `field`.
fn open_in<T>(netns: &str, field: &str, open: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let mut inner = None;
    netns::within(netns, || {
        inner = Some(open());
        Ok(())
    })
    .map_err(|e| format!("{field}: {e}"))?;
    inner.expect("within runs the closure")
}

/// Recycled packet buffers: no allocation per packet once the loop is warm.
struct Pool {
    free: Vec<Vec<u8>>,
}

impl Pool {
    fn copy_of(&mut self, data: &[u8]) -> Vec<u8> {
        let mut buffer = self.free.pop().unwrap_or_else(|| Vec::with_capacity(2048));
        buffer.clear();
        buffer.extend_from_slice(data);
        buffer
    }

    fn give(&mut self, buffer: Vec<u8>) {
        if self.free.len() < POOL_MAX {
            self.free.push(buffer);
        }
    }
}

/// Work for the reporting thread.
enum Message {
    Reports(Vec<UeReport>),
    Log(Vec<LogRecord>),
    Summary(Summary),
}

#[derive(Default)]
struct Ready {
    timer: bool,
    signal: bool,
    stdin: bool,
    sgi: bool,
    wire_server: bool,
    wire_core: bool,
    ues: Vec<bool>,
}

impl Ready {
    fn mark(&mut self, token: u64) {
        match token {
            TOKEN_TIMER => self.timer = true,
            TOKEN_SIGNAL => self.signal = true,
            TOKEN_STDIN => self.stdin = true,
            TOKEN_SGI => self.sgi = true,
            TOKEN_WIRE_SERVER => self.wire_server = true,
            TOKEN_WIRE_CORE => self.wire_core = true,
            ue => self.ues[(ue - TOKEN_UE) as usize] = true,
        }
    }

    fn clear(&mut self) {
        (self.timer, self.signal, self.stdin, self.sgi, self.wire_server, self.wire_core) =
            (false, false, false, false, false, false);
        self.ues.fill(false);
    }
}

#[derive(Default)]
struct Stats {
    downlink_packets: u64,
    uplink_packets: u64,
    unroutable: u64,
    to_core_packets: u64,
    to_server_packets: u64,
    wired_dropped: u64,
    send_errors: u64,
    reports_dropped: u64,
    packet_log_dropped: u64,
}

struct Datapath {
    epoll: Epoll,
    timer: Timer,
    signals: StopSignals,
    devices: Devices,
    ready: Ready,
    stop: bool,
    routes: HashMap<[u8; 4], usize>,
    backhaul: Vec<DelayLine<Sdu>>,
    /// Per UE, the SDUs completed and not yet written to its TUN (`delivery_delay_us`).
    air: Vec<DelayLine<Sdu>>,
    uplink: Vec<DelayLine<Vec<u8>>>,
    uplink_timing: Vec<uplink::Uplink>,
    to_core: WiredLink<Vec<u8>>,
    to_server: WiredLink<Vec<u8>>,
    cell: Cell,
    clock: TtiClock,
    /// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` when the clock started, ns: a TTI's time as the packet log's.
    realtime_offset_ns: u64,
    lateness: LatenessHistogram,
    pool: Pool,
    scratch: Vec<u8>,
    receive: ReceiveBatch,
    outgoing: Vec<Vec<u8>>,
    /// Uplink packets on their way to the core, in the order they go.
    passed: Vec<Vec<u8>>,
    iovecs: Vec<[libc::iovec; 2]>,
    headers: Vec<libc::mmsghdr>,
    deliveries: Vec<Delivery>,
    reports: Vec<UeReport>,
    log: Vec<LogRecord>,
    log_sent_tti: u64,
    logging: bool,
    reporter: SyncSender<Message>,
    stats: Stats,
    realtime: bool,
    /// When the loop last left the CPU to others (blocked or slept for at least `REST_NS`).
    rested_ns: u64,
}

impl Datapath {
    fn new(
        config: &Config,
        devices: Devices,
        cell: Cell,
        uplink_timing: Vec<uplink::Uplink>,
        reporter: SyncSender<Message>,
        logging: bool,
        realtime: bool,
    ) -> Result<Datapath, String> {
        let syscall = |what: &str, e: std::io::Error| format!("{what}: {}", reason(&e));
        let epoll = Epoll::new(64 + devices.ues.len()).map_err(|e| syscall("epoll_create1", e))?;
        let timer = Timer::new().map_err(|e| syscall("timerfd_create", e))?;
        let signals = StopSignals::new().map_err(|e| syscall("signalfd", e))?;
        let watch = |fd, token| epoll.add(fd, token).map_err(|e| syscall("epoll_ctl", e));
        watch(timer.fd(), TOKEN_TIMER)?;
        watch(signals.fd(), TOKEN_SIGNAL)?;
        watch(devices.sgi.fd(), TOKEN_SGI)?;
        watch(devices.wire_server.fd(), TOKEN_WIRE_SERVER)?;
        watch(devices.wire_core.fd(), TOKEN_WIRE_CORE)?;
        for (i, tun) in devices.ues.iter().enumerate() {
            watch(tun.fd(), TOKEN_UE + i as u64)?;
        }
        // Standard input's EOF means the parent is gone. A file or /dev/null cannot be watched (EPERM) and
        // a closed stdin (EBADF) has nothing to say: both are ignored.
        let _ = epoll.add(libc::STDIN_FILENO, TOKEN_STDIN);
        let w = &config.wired;
        Ok(Datapath {
            ready: Ready { ues: vec![false; devices.ues.len()], ..Ready::default() },
            epoll,
            timer,
            signals,
            stop: false,
            routes: config.ues.iter().enumerate().map(|(i, ue)| (ue.ipv4.octets(), i)).collect(),
            backhaul: config.ues.iter().map(|ue| DelayLine::new(ue.backhaul_delay_us * 1000)).collect(),
            air: config.ues.iter().map(|ue| DelayLine::new(ue.delivery_delay_us * 1000)).collect(),
            uplink: config.ues.iter().map(|_| DelayLine::new(0)).collect(), // Uplink::release_ns sets the time
            uplink_timing,
            to_core: WiredLink::new(w.rate_bps, w.delay_us * 1000, w.queue_limit_bytes),
            to_server: WiredLink::new(w.rate_bps, w.delay_us * 1000, w.queue_limit_bytes),
            cell,
            clock: TtiClock::new(0, config.tti_us, config.duration_ms),
            realtime_offset_ns: 0,
            lateness: LatenessHistogram::default(),
            pool: Pool { free: Vec::new() },
            scratch: vec![0; 65536],
            receive: ReceiveBatch::new(READ_BUDGET),
            outgoing: Vec::with_capacity(RELEASE_BUDGET),
            passed: Vec::new(),
            iovecs: Vec::with_capacity(RELEASE_BUDGET),
            headers: Vec::with_capacity(RELEASE_BUDGET),
            deliveries: Vec::new(),
            reports: Vec::new(),
            log: Vec::new(),
            log_sent_tti: 0,
            logging,
            reporter,
            stats: Stats::default(),
            realtime,
            rested_ns: 0,
            devices,
        })
    }

    fn run(&mut self) -> Result<(), String> {
        self.clock.start_ns = monotonic_ns();
        self.realtime_offset_ns = realtime_ns() - self.clock.start_ns;
        for uplink in &mut self.uplink_timing {
            uplink.set_start_ns(self.clock.start_ns);
        }
        self.rested_ns = self.clock.start_ns;
        while !self.stop {
            self.arm_timer()?;
            self.ready.clear();
            let ready = &mut self.ready;
            let before = monotonic_ns();
            self.epoll.wait(-1, |token| ready.mark(token)).map_err(|e| format!("epoll_wait: {}", reason(&e)))?;
            let after = monotonic_ns();
            if after - before >= REST_NS {
                self.rested_ns = after;
            } else if self.realtime && after - self.rested_ns > BUSY_MAX_NS {
                std::thread::sleep(std::time::Duration::from_nanos(REST_NS));
                self.rested_ns = monotonic_ns();
            }
            if self.ready.timer {
                self.timer.acknowledge();
            }
            if self.ready.signal && self.signals.take().is_some() {
                self.stop = true;
            }
            if self.ready.stdin {
                self.read_stdin();
            }
            if self.stop {
                break;
            }
            self.run_due_ttis();
            if self.ready.sgi {
                self.read_sgi();
                self.run_due_ttis();
            }
            for i in 0..self.devices.ues.len() {
                if self.ready.ues[i] {
                    self.read_ue(i);
                }
            }
            self.run_due_ttis();
            if self.ready.wire_server {
                self.read_wire(true);
            }
            if self.ready.wire_core {
                self.read_wire(false);
            }
            self.run_due_ttis();
            self.release_uplink();
            self.release_wired(true);
            self.release_wired(false);
            self.run_due_ttis();
            self.release_uplink(); // what the TTIs' ACK Regulators released
            self.release_air(monotonic_ns());
            self.send_log();
        }
        Ok(())
    }

    /// The next moment something is due: a TTI (or the end of `duration_ms`), an uplink release, a frame
    /// reaching the far end of the wired link. Backhaul releases only matter at TTI boundaries.
    fn arm_timer(&mut self) -> Result<(), String> {
        let mut deadline = self.clock.due_ns(self.cell.next_tti());
        let releases = self
            .uplink
            .iter()
            .filter_map(DelayLine::next_release)
            .chain(self.air.iter().filter_map(DelayLine::next_release));
        let arrivals = [self.to_core.next_arrival(), self.to_server.next_arrival()].into_iter().flatten();
        for moment in releases.chain(arrivals) {
            deadline = deadline.min(moment);
        }
        self.timer.arm(deadline).map_err(|e| format!("timerfd_settime: {}", reason(&e)))
    }

    /// Runs every TTI that is due, in order; stops at the end of `duration_ms`.
    fn run_due_ttis(&mut self) {
        while !self.stop {
            let (due, lateness) = match self.clock.step(self.cell.next_tti(), monotonic_ns()) {
                Step::Run { due_ns, lateness_ns } => (due_ns, lateness_ns),
                Step::Wait { .. } => return,
                Step::End => {
                    self.stop = true;
                    return;
                }
            };
            self.lateness.record(lateness);
            for (i, line) in self.backhaul.iter_mut().enumerate() {
                while let Some(sdu) = line.pop_due(due) {
                    if let Err(sdu) = self.cell.enqueue(i, sdu) {
                        self.pool.give(sdu.data);
                    }
                }
            }
            let period_end = self.cell.run_tti(&mut self.deliveries);
            if self.logging {
                for &(ue, drop) in self.cell.aqm_drops() {
                    let record = LogRecord {
                        ue: ue as u16,
                        length: drop.length.min(u16::MAX as u64) as u16,
                        flags: LogRecord::AQM_DROPPED,
                        arrival_ns: drop.arrival_ns,
                        delivery_ns: realtime_ns(),
                    };
                    log_record(&mut self.log, &mut self.stats.packet_log_dropped, record);
                }
            }
            if period_end.is_some() {
                self.cell.take_reports(realtime_ns(), &mut self.reports);
                let reports = std::mem::take(&mut self.reports);
                let lines = reports.len() as u64;
                if self.reporter.try_send(Message::Reports(reports)).is_err() {
                    self.stats.reports_dropped += lines;
                }
            }
            for delivery in self.deliveries.drain(..) {
                self.air[delivery.ue].push(due, delivery.sdu);
            }
            self.release_air(due);
        }
    }

    /// Writes to the UEs' TUNs the SDUs whose delivery delay has passed by `now` (monotonic ns).
    fn release_air(&mut self, now: u64) {
        for ue in 0..self.air.len() {
            while let Some(sdu) = self.air[ue].pop_due(now) {
                let data = sdu.data;
                match write_packet(self.devices.ues[ue].fd(), &data) {
                    Ok(()) if self.logging => {
                        let flags = if sdu.ce_marked { LogRecord::CE_MARKED } else { 0 };
                        let record = LogRecord {
                            ue: ue as u16,
                            length: data.len().min(u16::MAX as usize) as u16,
                            flags,
                            arrival_ns: sdu.arrival_ns,
                            delivery_ns: realtime_ns(),
                        };
                        log_record(&mut self.log, &mut self.stats.packet_log_dropped, record);
                    }
                    Ok(()) => {}
                    Err(_) => self.stats.send_errors += 1,
                }
                self.pool.give(data);
            }
        }
    }

    fn read_stdin(&mut self) {
        let mut buffer = [0u8; 512];
        match read_some(libc::STDIN_FILENO, &mut buffer) {
            Ok(0) => self.stop = true,
            Ok(_) => {}
            Err(e) if would_block(&e) => {}
            Err(_) => {
                let _ = self.epoll.remove(libc::STDIN_FILENO);
            }
        }
    }

    /// Downlink: SGi TUN to the backhaul delay line of the UE whose address is the destination.
    fn read_sgi(&mut self) {
        let fd = self.devices.sgi.fd();
        for _ in 0..READ_BUDGET {
            let n = match read_some(fd, &mut self.scratch) {
                Ok(n) => n,
                Err(e) if would_block(&e) => return,
                Err(e) => return self.device_failed(fd, "the SGi TUN device", &e),
            };
            let packet = &self.scratch[..n];
            let ue = (n >= 20 && packet[0] >> 4 == 4)
                .then(|| self.routes.get(&[packet[16], packet[17], packet[18], packet[19]]))
                .flatten();
            let Some(&ue) = ue else {
                self.stats.unroutable += 1;
                continue;
            };
            self.stats.downlink_packets += 1;
            let sdu = Sdu { data: self.pool.copy_of(packet), arrival_ns: realtime_ns(), ce_marked: false };
            self.backhaul[ue].push(monotonic_ns(), sdu);
        }
    }

    /// Uplink: UE TUN to its uplink delay line.
    fn read_ue(&mut self, ue: usize) {
        let fd = self.devices.ues[ue].fd();
        for _ in 0..READ_BUDGET {
            let n = match read_some(fd, &mut self.scratch) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if would_block(&e) => return,
                Err(e) => return self.device_failed(fd, &format!("UE {ue}'s TUN device"), &e),
            };
            self.stats.uplink_packets += 1;
            let mut packet = self.pool.copy_of(&self.scratch[..n]);
            let now = monotonic_ns();
            // IPv4 only: the kernel's own IPv6 packets as the device comes up are not the UE's traffic
            if packet[0] >> 4 == 4 && self.cell.start_trace(ue) {
                self.uplink_timing[ue].set_start_ns(now);
            }
            self.cell.uplink(ue, &mut packet);
            let leaves = self.uplink_timing[ue].release_ns(now, n);
            self.uplink[ue].push_until(leaves, packet);
        }
    }

    /// Wired link: frames received on one veth end enter the serialization queue towards the other.
    fn read_wire(&mut self, from_server: bool) {
        let (socket, link) = if from_server {
            (&self.devices.wire_server, &mut self.to_core)
        } else {
            (&self.devices.wire_core, &mut self.to_server)
        };
        let received = match self.receive.receive(socket) {
            Ok(n) => n,
            Err(e) => {
                let fd = socket.fd();
                let name = if from_server { "wire server side" } else { "wire core side" };
                return self.device_failed(fd, name, &e);
            }
        };
        let now = monotonic_ns();
        for i in 0..received {
            let frame = self.receive.frame(i);
            let copy = self.pool.copy_of(frame);
            if let Err(dropped) = link.offer(now, frame.len(), copy) {
                self.stats.wired_dropped += 1;
                self.pool.give(dropped);
            }
        }
    }

    /// Uplink packets whose delay is over reach the base station (and its ACK Regulator, if any), then the core;
    /// with them, the ACKs the regulators released in the TTIs just run.
    fn release_uplink(&mut self) {
        let now = monotonic_ns();
        let fd = self.devices.sgi.fd();
        self.cell.take_released(&mut self.passed);
        for (ue, line) in self.uplink.iter_mut().enumerate() {
            for _ in 0..RELEASE_BUDGET {
                let Some(packet) = line.pop_due(now) else { break };
                self.cell.regulate(ue, packet, &mut self.passed);
            }
        }
        for packet in self.passed.drain(..) {
            if write_packet(fd, &packet).is_err() {
                self.stats.send_errors += 1;
            }
            self.pool.give(packet);
        }
    }

    fn release_wired(&mut self, to_core: bool) {
        let now = monotonic_ns();
        let (link, socket) = if to_core {
            (&mut self.to_core, &self.devices.wire_core)
        } else {
            (&mut self.to_server, &self.devices.wire_server)
        };
        while self.outgoing.len() < RELEASE_BUDGET {
            let Some(frame) = link.pop_due(now) else { break };
            self.outgoing.push(frame);
        }
        if self.outgoing.is_empty() {
            return;
        }
        let refused = send_all(socket, &self.outgoing, &mut self.iovecs, &mut self.headers);
        let sent = self.outgoing.len() as u64 - refused;
        self.stats.send_errors += refused;
        if to_core {
            self.stats.to_core_packets += sent;
        } else {
            self.stats.to_server_packets += sent;
        }
        for frame in self.outgoing.drain(..) {
            self.pool.give(frame);
        }
    }

    /// A device that fails other than "try again" (e.g. deleted under us) is no longer read.
    fn device_failed(&mut self, fd: i32, name: &str, error: &std::io::Error) {
        eprintln!("rnf-cell-dp: warning: reading {name} failed ({}); no longer reading it", reason(error));
        let _ = self.epoll.remove(fd);
    }

    /// Hands the packet-log records to the reporting thread in batches (few wake-ups of that thread), or
    /// keeps them for a later pass when its queue is full.
    fn send_log(&mut self) {
        let tti = self.cell.next_tti();
        if self.log.is_empty() || (self.log.len() < LOG_BATCH_RECORDS && tti < self.log_sent_tti + LOG_BATCH_TTIS) {
            return;
        }
        let records = std::mem::replace(&mut self.log, Vec::with_capacity(LOG_BATCH_RECORDS));
        match self.reporter.try_send(Message::Log(records)) {
            Ok(()) => self.log_sent_tti = tti,
            Err(TrySendError::Full(Message::Log(records)) | TrySendError::Disconnected(Message::Log(records))) => {
                self.log = records
            }
            Err(_) => unreachable!("only Log messages are sent here"),
        }
    }

    fn summary(&self) -> Summary {
        Summary {
            kind: "summary",
            ttis: self.cell.next_tti(),
            tti_lateness_ns: self.lateness.summary(),
            downlink_packets: self.stats.downlink_packets,
            uplink_packets: self.stats.uplink_packets,
            unroutable: self.stats.unroutable,
            wired: WiredSummary {
                to_core_packets: self.stats.to_core_packets,
                to_server_packets: self.stats.to_server_packets,
                dropped_packets: self.stats.wired_dropped,
            },
            reports_dropped: self.stats.reports_dropped,
            packet_log_dropped: self.stats.packet_log_dropped,
            send_errors: self.stats.send_errors,
            trace_started_ns: (0..self.devices.ues.len())
                .map(|ue| self.cell.trace_origin(ue).map(|tti| self.clock.due_ns(tti) + self.realtime_offset_ns))
                .collect(),
        }
    }

    /// The remaining packet-log records and the summary, waiting for room in the queue this time.
    fn finish(&mut self, summary: Summary) {
        if !self.log.is_empty() {
            let _ = self.reporter.send(Message::Log(std::mem::take(&mut self.log)));
        }
        let _ = self.reporter.send(Message::Summary(summary));
    }
}

/// The reporting thread: JSON lines to standard output (flushed whenever the queue runs empty) and the
/// packet log, until the loop drops its sender.
/// Appends a packet-log record, or counts it lost when the reporting thread is too far behind.
fn log_record(log: &mut Vec<LogRecord>, lost: &mut u64, record: LogRecord) {
    if log.len() < LOG_BACKLOG_MAX {
        log.push(record);
    } else {
        *lost += 1;
    }
}

fn write_reports(receiver: Receiver<Message>, packet_log: Option<File>) {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut out_ok = true;
    let mut log = packet_log.map(|file| BufWriter::with_capacity(1 << 20, file));
    let mut log_ok = true;
    loop {
        let message = match receiver.try_recv() {
            Ok(message) => message,
            Err(TryRecvError::Empty) => {
                // A reader that went away (EPIPE) is not an error for the datapath.
                out_ok = out_ok && out.flush().is_ok();
                match receiver.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        match message {
            Message::Reports(reports) => {
                for report in &reports {
                    out_ok = out_ok && write_line(&mut out, report);
                }
            }
            Message::Summary(summary) => out_ok = out_ok && write_line(&mut out, &summary),
            Message::Log(records) => {
                if let Some(writer) = log.as_mut().filter(|_| log_ok) {
                    for record in &records {
                        if let Err(e) = writer.write_all(&record.encode()) {
                            eprintln!("rnf-cell-dp: warning: packet log: {}; no more records written", reason(&e));
                            log_ok = false;
                            break;
                        }
                    }
                }
            }
        }
    }
    let _ = out.flush();
    if let Some(mut writer) = log.filter(|_| log_ok) {
        if let Err(e) = writer.flush() {
            eprintln!("rnf-cell-dp: warning: packet log: {}", reason(&e));
        }
    }
}

fn write_line(out: &mut impl Write, value: &impl serde::Serialize) -> bool {
    serde_json::to_writer(&mut *out, value).is_ok() && out.write_all(b"\n").is_ok()
}
