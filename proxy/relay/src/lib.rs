//! rnf-relay: the split proxy's byte-moving data path, outside Python's interpreter lock.
//!
//! A C ABI (`INTERFACE.md`) that `rnf_proxy.relay` loads with ctypes: the proxy hands over the two sockets of
//! every split connection and keeps deciding; worker threads (`engine`) splice the bytes, carry FIN and RST
//! across and bound each connection's pipe; controlled downlinks move only as far as the proxy grants
//! (`rnf_relay_grant`). Every function returns at once (no call waits on the network), so holding a worker's
//! lock from the proxy's thread is short.
//!
//! The same library steps the RAN-feedback controllers' laws (`control`) over the proxy's bank columns, so
//! that a telemetry burst becomes decisions in microseconds.

pub mod control;
mod engine;
mod flow;
mod sys;

use std::os::fd::RawFd;

pub use engine::{Engine, Event, FlowInfo};

fn negative_errno(error: &std::io::Error) -> i32 {
    -error.raw_os_error().unwrap_or(libc::EIO)
}

/// A new engine with `workers` threads (1 to 255); null on failure (errno says why).
#[unsafe(no_mangle)]
pub extern "C" fn rnf_relay_new(workers: u32) -> *mut Engine {
    match Engine::new(workers as usize) {
        Ok(engine) => Box::into_raw(Box::new(engine)),
        Err(error) => {
            // SAFETY: errno is thread-local and writable.
            unsafe { *libc::__errno_location() = error.raw_os_error().unwrap_or(libc::EIO) };
            std::ptr::null_mut()
        }
    }
}

/// Stop the workers and free the engine; the sockets stay open (the caller owns them).
///
/// # Safety
/// `engine` comes from `rnf_relay_new` and is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_free(engine: *mut Engine) {
    if !engine.is_null() {
        // SAFETY: the caller passes the pointer rnf_relay_new gave, once.
        drop(unsafe { Box::from_raw(engine) });
    }
}

/// # Safety
/// `engine` is live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_notify_fd(engine: *const Engine) -> i32 {
    // SAFETY: the caller passes a live engine.
    unsafe { &*engine }.notify_fd()
}

/// Relay between two connected non-blocking sockets; the flow's id in `*id`. 0, or -errno.
///
/// # Safety
/// `engine` is live, `id` writable; the sockets stay open until the flow is removed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_add(
    engine: *const Engine,
    ue: RawFd,
    server: RawFd,
    pipe_bytes: u64,
    notsent_limit: u64,
    controlled: i32,
    held: i32,
    id: *mut u64,
) -> i32 {
    // SAFETY: the caller passes a live engine.
    let engine = unsafe { &*engine };
    match engine.add(ue, server, pipe_bytes as usize, notsent_limit as usize, controlled != 0, held != 0) {
        Ok(flow) => {
            // SAFETY: the caller passes a writable id.
            unsafe { *id = flow };
            0
        }
        Err(error) => negative_errno(&error),
    }
}

/// The downlink pipe's limit (bytes), whether the server is held back, whether the downlink is controlled.
/// 0, or -ENOENT for an unknown flow.
///
/// # Safety
/// `engine` is live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_configure(
    engine: *const Engine,
    id: u64,
    limit: u64,
    held: i32,
    controlled: i32,
) -> i32 {
    // SAFETY: the caller passes a live engine.
    let engine = unsafe { &*engine };
    if engine.configure(id, limit as usize, held != 0, controlled != 0) { 0 } else { -libc::ENOENT }
}

/// Controlled downlinks: let up to `limits[i]` more bytes of flow `ids[i]`'s pipe leave toward the UE; the
/// bytes granted in `granted[i]` (at most what waits ungranted), their sum returned. The worker threads move
/// them.
///
/// # Safety
/// `engine` is live; the arrays hold `count` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_grant(
    engine: *const Engine,
    ids: *const u64,
    limits: *const u64,
    granted: *mut u64,
    count: usize,
) -> u64 {
    // SAFETY: the caller passes a live engine and arrays of `count` elements.
    let (engine, ids, limits, granted) = unsafe {
        (
            &*engine,
            std::slice::from_raw_parts(ids, count),
            std::slice::from_raw_parts(limits, count),
            std::slice::from_raw_parts_mut(granted, count),
        )
    };
    let mut total = 0;
    for ((id, limit), out) in ids.iter().zip(limits).zip(granted.iter_mut()) {
        *out = engine.grant(*id, *limit as usize) as u64;
        total += *out;
    }
    total
}

/// The counters of `count` flows into `out`. Looking re-arms the flow's data event.
///
/// # Safety
/// `engine` is live; `ids` and `out` hold `count` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_info(engine: *const Engine, ids: *const u64, out: *mut FlowInfo, count: usize) {
    // SAFETY: the caller passes a live engine and arrays of `count` elements.
    let (engine, ids, out) =
        unsafe { (&*engine, std::slice::from_raw_parts(ids, count), std::slice::from_raw_parts_mut(out, count)) };
    for (id, info) in ids.iter().zip(out.iter_mut()) {
        *info = engine.info(*id);
    }
}

/// Of `count` flows, those with bytes waiting toward the UE, not granted yet: their index in `ids` into `indices` and the
/// bytes into `buffered` (room for `count` each); the number of such flows. Looking re-arms data events.
///
/// # Safety
/// `engine` is live; the arrays hold `count` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_demand(
    engine: *const Engine,
    ids: *const u64,
    count: usize,
    indices: *mut u32,
    buffered: *mut u64,
) -> usize {
    // SAFETY: the caller passes a live engine and arrays of `count` elements.
    let (engine, ids, indices, buffered) = unsafe {
        (
            &*engine,
            std::slice::from_raw_parts(ids, count),
            std::slice::from_raw_parts_mut(indices, count),
            std::slice::from_raw_parts_mut(buffered, count),
        )
    };
    let mut pairs = vec![(0, 0); count];
    let found = engine.demand(ids, &mut pairs);
    for ((index, bytes), (index_out, bytes_out)) in pairs[..found].iter().zip(indices.iter_mut().zip(buffered)) {
        *index_out = *index;
        *bytes_out = *bytes;
    }
    found
}

/// The sum over `count` flows of their UE sockets' send queues (SIOCOUTQ), or of their unsent bytes
/// (SIOCOUTQNSD) when `unsent_only`, each plus the bytes granted still in its pipe.
///
/// # Safety
/// `engine` is live; `ids` holds `count` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_queued(
    engine: *const Engine,
    ids: *const u64,
    count: usize,
    unsent_only: i32,
) -> u64 {
    // SAFETY: the caller passes a live engine and an array of `count` elements.
    let (engine, ids) = unsafe { (&*engine, std::slice::from_raw_parts(ids, count)) };
    ids.iter().map(|id| engine.queued(*id, unsent_only != 0) as u64).sum()
}

/// Stop relaying flow `id` (if it still does) and forget it; the caller closes the sockets.
///
/// # Safety
/// `engine` is live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_remove(engine: *const Engine, id: u64) {
    // SAFETY: the caller passes a live engine.
    unsafe { &*engine }.remove(id);
}

/// Up to `capacity` queued events into `out`; the number taken.
///
/// # Safety
/// `engine` is live; `out` has room for `capacity` events.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_relay_events(engine: *const Engine, out: *mut Event, capacity: usize) -> usize {
    // SAFETY: the caller passes a live engine and room for `capacity` events.
    let (engine, out) = unsafe { (&*engine, std::slice::from_raw_parts_mut(out, capacity)) };
    engine.events(out)
}

/// The SMVS law (paper 000 eq. 36) for `count` reports, in order, into `outputs`. `columns` points to
/// `column_count` column pointers of `capacity` rows (`SmvsColumns`). 0, or -EINVAL for a wrong column count,
/// a row out of range or impossible parameters (nothing is stepped then).
///
/// # Safety
/// The pointers address what they say: the parameters, the columns (`capacity` rows each, the rings
/// `blocks` and `QUOTA_HISTORY` wide), `count` reports and `count` outputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_smvs_step(
    params: *const control::SmvsParams,
    columns: *const control::SmvsColumns,
    column_count: usize,
    capacity: usize,
    reports: *const control::Report,
    count: usize,
    now: f64,
    outputs: *mut control::Output,
) -> i32 {
    // SAFETY: as the caller promises.
    unsafe { step_law(control::smvs_step, params, columns, column_count, capacity, reports, count, now, outputs) }
}

/// The RNF laws (paper 001 eqs. 1-2) for `count` reports, in order, into `outputs`; as `rnf_smvs_step`, with
/// `RnfColumns`.
///
/// # Safety
/// As `rnf_smvs_step`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rnf_rnf_step(
    params: *const control::RnfParams,
    columns: *const control::RnfColumns,
    column_count: usize,
    capacity: usize,
    reports: *const control::Report,
    count: usize,
    now: f64,
    outputs: *mut control::Output,
) -> i32 {
    // SAFETY: as the caller promises.
    unsafe { step_law(control::rnf_step, params, columns, column_count, capacity, reports, count, now, outputs) }
}

type Law<P, C> = fn(&P, &C, usize, &[control::Report], f64, &mut [control::Output]) -> Result<(), control::Refused>;

/// # Safety
/// As `rnf_smvs_step`; `C` is a structure of column pointers.
#[allow(clippy::too_many_arguments)]
unsafe fn step_law<P, C>(
    law: Law<P, C>,
    params: *const P,
    columns: *const C,
    column_count: usize,
    capacity: usize,
    reports: *const control::Report,
    count: usize,
    now: f64,
    outputs: *mut control::Output,
) -> i32 {
    if column_count != std::mem::size_of::<C>() / std::mem::size_of::<*mut f64>() {
        return -libc::EINVAL;
    }
    // SAFETY: as the caller promises.
    let (params, columns, reports, outputs) = unsafe {
        (
            &*params,
            &*columns,
            std::slice::from_raw_parts(reports, count),
            std::slice::from_raw_parts_mut(outputs, count),
        )
    };
    match law(params, columns, capacity, reports, now, outputs) {
        Ok(()) => 0,
        Err(_) => -libc::EINVAL,
    }
}

#[cfg(test)]
mod tests;
