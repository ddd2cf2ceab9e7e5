//! The engine between real TCP sockets on loopback: byte-exact both ways, FIN and RST carried across,
//! controlled downlinks moving only what the proxy sends.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::engine::{EVENT_CLOSED, EVENT_DATA, Engine, Event, FLAG_RESET};

/// A split connection on loopback: (the UE's end, the proxy's UE socket, the proxy's server socket, the
/// server's end).
fn split() -> (TcpStream, TcpStream, TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let ue = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (proxy_ue, _) = listener.accept().unwrap();
    let proxy_server = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    for stream in [&proxy_ue, &proxy_server] {
        stream.set_nonblocking(true).unwrap();
    }
    for stream in [&ue, &server] {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    (ue, proxy_ue, proxy_server, server)
}

fn payload(size: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..size)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

/// Events until one of `kind` arrives for each of `flows`; the events taken.
fn wait_for(engine: &Engine, kind: u32, flows: &[u64]) -> Vec<Event> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    let mut out = [Event::default(); 16];
    while !flows.iter().all(|flow| seen.iter().any(|event: &Event| event.kind == kind && event.flow == *flow)) {
        assert!(Instant::now() < deadline, "no event of kind {kind} for every flow: {seen:?}");
        let count = engine.events(&mut out);
        seen.extend_from_slice(&out[..count]);
        std::thread::sleep(Duration::from_millis(1));
    }
    seen
}

/// The server sends `down` and its FIN while the UE sends `up` and its FIN; what each end received.
fn exchange(mut ue: TcpStream, mut server: TcpStream, down: Vec<u8>, up: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let mut server_writer = server.try_clone().unwrap();
    let mut ue_writer = ue.try_clone().unwrap();
    let writers = [
        std::thread::spawn(move || {
            server_writer.write_all(&down).unwrap();
            server_writer.shutdown(Shutdown::Write).unwrap();
        }),
        std::thread::spawn(move || {
            ue_writer.write_all(&up).unwrap();
            ue_writer.shutdown(Shutdown::Write).unwrap();
        }),
    ];
    let uplink = std::thread::spawn(move || {
        let mut uploaded = Vec::new();
        server.read_to_end(&mut uploaded).unwrap();
        uploaded
    });
    let mut received = Vec::new();
    ue.read_to_end(&mut received).unwrap();
    for writer in writers {
        writer.join().unwrap();
    }
    (received, uplink.join().unwrap())
}

#[test]
fn free_flows_are_byte_exact_both_ways_and_half_closes_are_carried() {
    let engine = Engine::new(2).unwrap();
    let mut ids = Vec::new();
    let mut sockets = Vec::new();
    let mut exchanges = Vec::new();
    for seed in 0..4_u64 {
        let (ue, proxy_ue, proxy_server, server) = split();
        ids.push(
            engine.add(proxy_ue.as_raw_fd(), proxy_server.as_raw_fd(), 256 * 1024, 256 * 1024, false, false).unwrap(),
        );
        sockets.push((proxy_ue, proxy_server));
        let down = payload(3_000_000 + seed as usize * 7919, seed);
        let up = payload(1_000_000 + seed as usize, seed + 100);
        exchanges.push(std::thread::spawn(move || {
            let (received, uploaded) = exchange(ue, server, down.clone(), up.clone());
            assert!(received == down, "downlink of flow {seed} differs");
            assert!(uploaded == up, "uplink of flow {seed} differs");
        }));
    }
    for exchange in exchanges {
        exchange.join().unwrap();
    }
    wait_for(&engine, EVENT_CLOSED, &ids);
    for id in ids {
        assert_eq!(engine.info(id).flags & FLAG_RESET, 0);
        engine.remove(id);
    }
}

#[test]
fn a_controlled_downlink_moves_only_what_is_granted() {
    let engine = Engine::new(1).unwrap();
    let (mut ue, proxy_ue, proxy_server, mut server) = split();
    let id = engine.add(proxy_ue.as_raw_fd(), proxy_server.as_raw_fd(), 256 * 1024, 256 * 1024, true, false).unwrap();
    let data = payload(100_000, 1);
    server.write_all(&data).unwrap();
    wait_for(&engine, EVENT_DATA, &[id]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(engine.info(id).down_buffered, 100_000);
    assert_eq!(engine.grant(id, 30_000), 30_000);
    let mut first = vec![0; 30_000];
    ue.read_exact(&mut first).unwrap();
    assert_eq!(first, data[..30_000]);
    ue.set_nonblocking(true).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(ue.read(&mut [0; 16]).is_err(), "more than was granted reached the UE");
    assert_eq!(engine.info(id).down_sent, 30_000);
    // a grant never exceeds what waits ungranted, so granting twice cannot release a byte twice
    assert_eq!(engine.grant(id, 1_000_000), 70_000);
    assert_eq!(engine.grant(id, 1_000_000), 0);
    ue.set_nonblocking(false).unwrap();
    let mut rest = vec![0; 70_000];
    ue.read_exact(&mut rest).unwrap();
    assert_eq!(rest, data[30_000..]);
    assert_eq!(engine.info(id).down_sent, 100_000);
}

#[test]
fn a_grant_larger_than_the_ue_socket_takes_is_spent_as_the_ue_reads() {
    let engine = Engine::new(1).unwrap();
    let (mut ue, proxy_ue, proxy_server, mut server) = split();
    let small: libc::c_int = 16 * 1024;
    // SAFETY: a valid socket and an int option of the right size.
    let set = unsafe {
        libc::setsockopt(
            proxy_ue.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0);
    let id = engine.add(proxy_ue.as_raw_fd(), proxy_server.as_raw_fd(), 1 << 20, 1 << 20, true, false).unwrap();
    let data = payload(600_000, 2);
    let writer = {
        let data = data.clone();
        std::thread::spawn(move || server.write_all(&data).unwrap())
    };
    let mut received = Vec::new();
    let mut chunk = vec![0; 65_536];
    let deadline = Instant::now() + Duration::from_secs(10);
    while received.len() < data.len() {
        assert!(Instant::now() < deadline, "stalled at {} bytes", received.len());
        let ids = [id];
        let mut waiting = [(0, 0)];
        if engine.demand(&ids, &mut waiting) == 1 {
            engine.grant(id, waiting[0].1 as usize);
        }
        ue.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        match ue.read(&mut chunk) {
            Ok(count) => received.extend_from_slice(&chunk[..count]),
            Err(error) => {
                assert!(matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
            }
        }
    }
    writer.join().unwrap();
    assert!(received == data, "the downlink differs");
    while engine.queued(id, false) > 0 {
        assert!(Instant::now() < deadline, "the UE socket still holds bytes after the UE read them all");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_reset_on_one_side_resets_the_other() {
    let engine = Engine::new(1).unwrap();
    let (mut ue, proxy_ue, proxy_server, server) = split();
    let id = engine.add(proxy_ue.as_raw_fd(), proxy_server.as_raw_fd(), 65_536, 65_536, false, false).unwrap();
    crate::sys::reset_on_close(server.as_raw_fd());
    drop(server);
    wait_for(&engine, EVENT_CLOSED, &[id]);
    assert_ne!(engine.info(id).flags & FLAG_RESET, 0);
    engine.remove(id);
    drop(proxy_ue); // closed with SO_LINGER 0: a RST for the UE
    drop(proxy_server);
    let error = ue.read(&mut [0; 16]).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset);
}
