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
fn a_controlled_downlink_moves_only_what_is_sent() {
    let engine = Engine::new(1).unwrap();
    let (mut ue, proxy_ue, proxy_server, mut server) = split();
    let id = engine.add(proxy_ue.as_raw_fd(), proxy_server.as_raw_fd(), 256 * 1024, 256 * 1024, true, false).unwrap();
    server.write_all(&payload(100_000, 1)).unwrap();
    wait_for(&engine, EVENT_DATA, &[id]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(engine.info(id).down_buffered, 100_000);
    assert_eq!(engine.send(id, 30_000), 30_000);
    let mut first = vec![0; 30_000];
    ue.read_exact(&mut first).unwrap();
    assert_eq!(first, payload(100_000, 1)[..30_000]);
    ue.set_nonblocking(true).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(ue.read(&mut [0; 16]).is_err(), "more than was sent reached the UE");
    assert_eq!(engine.info(id).down_sent, 30_000);
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
