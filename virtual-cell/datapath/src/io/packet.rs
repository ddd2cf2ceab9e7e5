//! `AF_PACKET`/`SOCK_RAW` sockets bound to one interface (`ETH_P_ALL`, `PACKET_IGNORE_OUTGOING`), read and
//! written in batches with `recvmmsg`/`sendmmsg`.
//!
//! A veth's sender leaves TCP/UDP checksums to "hardware" (`CHECKSUM_PARTIAL`); a frame read here would carry
//! an incomplete checksum, and the far side would drop it. With `PACKET_VNET_HDR` each frame comes with a
//! `virtio_net_hdr` saying so, and `receive` completes the checksum, as a NIC would on transmit.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::netns::ifindex;
use super::reason;

const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `struct virtio_net_hdr` (legacy, host byte order): flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
const VNET_HDR_LEN: usize = 10;
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
/// The header sent with every frame: no checksum to complete, no segmentation.
static NO_OFFLOAD: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];
const RECEIVE_BUFFER: libc::c_int = 8 << 20;
const SEND_BUFFER: libc::c_int = 4 << 20;

pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens a socket on `ifname` in the calling thread's namespace that sees every frame the interface
    /// receives, and none it sends.
    pub fn bind(ifname: &str) -> Result<PacketSocket, String> {
        let index = ifindex(ifname).ok_or_else(|| format!("no device {ifname}"))?;
        let fail = |what: &str| format!("{what} on {ifname}: {}", reason(&io::Error::last_os_error()));
        // Protocol 0: no frames are queued before `bind` picks the interface.
        // SAFETY: plain system call; the result is a new fd we own.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(fail("AF_PACKET socket"));
        }
        let socket = PacketSocket { fd: unsafe { OwnedFd::from_raw_fd(fd) } };
        socket.option(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1).map_err(|_| fail("PACKET_IGNORE_OUTGOING"))?;
        socket.option(libc::SOL_PACKET, PACKET_VNET_HDR, 1).map_err(|_| fail("PACKET_VNET_HDR"))?;
        // Root may exceed rmem_max/wmem_max; fall back to the capped options otherwise.
        if socket.option(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RECEIVE_BUFFER).is_err() {
            socket.option(libc::SOL_SOCKET, libc::SO_RCVBUF, RECEIVE_BUFFER).map_err(|_| fail("SO_RCVBUF"))?;
        }
        if socket.option(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, SEND_BUFFER).is_err() {
            socket.option(libc::SOL_SOCKET, libc::SO_SNDBUF, SEND_BUFFER).map_err(|_| fail("SO_SNDBUF"))?;
        }
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        address.sll_ifindex = index as i32;
        // SAFETY: `address` is a valid sockaddr_ll of the given size.
        let bound = unsafe {
            libc::bind(
                socket.fd.as_raw_fd(),
                &address as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if bound < 0 {
            return Err(fail("bind"));
        }
        Ok(socket)
    }

    fn option(&self, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: `value` is a valid int for the option's length.
        let result = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                &value as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if result < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Buffers for one `recvmmsg` call: up to `slots` frames of up to `SLOT_BYTES` each, with their headers.
pub struct ReceiveBatch {
    vnet: Vec<[u8; VNET_HDR_LEN]>,
    buffers: Vec<Vec<u8>>,
    iovecs: Vec<[libc::iovec; 2]>,
    headers: Vec<libc::mmsghdr>,
    received: usize,
}

const SLOT_BYTES: usize = 65536;

impl ReceiveBatch {
    pub fn new(slots: usize) -> ReceiveBatch {
        let mut vnet = vec![[0u8; VNET_HDR_LEN]; slots];
        let mut buffers: Vec<Vec<u8>> = (0..slots).map(|_| vec![0u8; SLOT_BYTES]).collect();
        let mut iovecs: Vec<[libc::iovec; 2]> = vnet
            .iter_mut()
            .zip(buffers.iter_mut())
            .map(|(v, b)| {
                [
                    libc::iovec { iov_base: v.as_mut_ptr() as *mut libc::c_void, iov_len: VNET_HDR_LEN },
                    libc::iovec { iov_base: b.as_mut_ptr() as *mut libc::c_void, iov_len: b.len() },
                ]
            })
            .collect();
        let headers = iovecs.iter_mut().map(message).collect();
        ReceiveBatch { vnet, buffers, iovecs, headers, received: 0 }
    }

    /// Receives up to the batch size without blocking and completes partial checksums; returns how many
    /// frames came (0: none waiting).
    pub fn receive(&mut self, socket: &PacketSocket) -> io::Result<usize> {
        debug_assert_eq!(self.iovecs.len(), self.headers.len());
        // SAFETY: headers point at iovecs that point at our buffers; all live as long as `self`.
        let n = unsafe {
            libc::recvmmsg(
                socket.fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let error = io::Error::last_os_error();
            self.received = 0;
            return if super::would_block(&error) { Ok(0) } else { Err(error) };
        }
        self.received = n as usize;
        for i in 0..self.received {
            let vnet = self.vnet[i];
            if vnet[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
                let start = u16::from_ne_bytes([vnet[6], vnet[7]]) as usize;
                let offset = u16::from_ne_bytes([vnet[8], vnet[9]]) as usize;
                let len = self.len(i);
                complete_checksum(&mut self.buffers[i][..len], start, offset);
            }
        }
        Ok(self.received)
    }

    fn len(&self, i: usize) -> usize {
        (self.headers[i].msg_len as usize).saturating_sub(VNET_HDR_LEN)
    }

    /// Frame `i` of the last `receive`.
    pub fn frame(&self, i: usize) -> &[u8] {
        debug_assert!(i < self.received);
        &self.buffers[i][..self.len(i)]
    }
}

fn message(iovecs: &mut [libc::iovec; 2]) -> libc::mmsghdr {
    // SAFETY: msghdr is plain data; zero is valid (no name: the socket is bound; no control).
    let mut header: libc::mmsghdr = unsafe { std::mem::zeroed() };
    header.msg_hdr.msg_iov = iovecs.as_mut_ptr();
    header.msg_hdr.msg_iovlen = 2;
    header
}

/// Completes an Internet checksum left partial by the sender: the one's-complement sum of the frame from
/// `start` to its end (the checksum field at `start + offset` holds the pseudo-header sum) goes into that
/// field, as `skb_checksum_help` does. False when the offsets do not fit the frame.
pub fn complete_checksum(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let field = start + offset;
    if field + 2 > frame.len() {
        return false;
    }
    let data = &frame[start..];
    let mut sum: u64 = 0;
    let mut words = data.chunks_exact(2);
    for word in &mut words {
        sum += u16::from_be_bytes([word[0], word[1]]) as u64;
    }
    if let [last] = words.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let check = match !(sum as u16) {
        0 => 0xffff,
        check => check,
    };
    frame[field..field + 2].copy_from_slice(&check.to_be_bytes());
    true
}

/// Sends frames on a bound socket with as few `sendmmsg` calls as possible. Returns how many the kernel
/// refused (e.g. `ENOBUFS` when the peer's queue is full); those are dropped.
pub fn send_all(
    socket: &PacketSocket,
    frames: &[Vec<u8>],
    iovecs: &mut Vec<[libc::iovec; 2]>,
    headers: &mut Vec<libc::mmsghdr>,
) -> u64 {
    iovecs.clear();
    iovecs.extend(frames.iter().map(|f| {
        [
            libc::iovec { iov_base: NO_OFFLOAD.as_ptr() as *mut libc::c_void, iov_len: VNET_HDR_LEN },
            libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() },
        ]
    }));
    headers.clear();
    headers.extend(iovecs.iter_mut().map(message));
    let mut refused = 0;
    let mut next = 0;
    while next < headers.len() {
        // SAFETY: headers[next..] point at iovecs that point at `frames` and NO_OFFLOAD, alive during the
        // call; the kernel only reads them.
        let n = unsafe {
            libc::sendmmsg(
                socket.fd(),
                headers[next..].as_mut_ptr(),
                (headers.len() - next) as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if n <= 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // This frame was refused; go on with the next.
            refused += 1;
            next += 1;
        } else {
            next += n as usize;
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the TCP checksum of an IPv4 packet computed from scratch (RFC 793 pseudo-header).
    fn reference_tcp_checksum(ip: &[u8]) -> u16 {
        let header_len = (ip[0] & 0x0f) as usize * 4;
        let segment = &ip[header_len..];
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&ip[12..20]);
        bytes.extend_from_slice(&[0, 6]);
        bytes.extend_from_slice(&(segment.len() as u16).to_be_bytes());
        let mut zeroed = segment.to_vec();
        zeroed[16] = 0;
        zeroed[17] = 0;
        bytes.extend_from_slice(&zeroed);
        if bytes.len() % 2 == 1 {
            bytes.push(0);
        }
        let mut sum: u32 = bytes.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An Ethernet frame with an IPv4 TCP segment of `payload` bytes, checksum field holding the folded
    /// pseudo-header sum as Linux leaves it for `CHECKSUM_PARTIAL`.
    fn partial_frame(payload: usize) -> Vec<u8> {
        let mut frame = vec![0u8; 14];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        let total = 20 + 20 + payload;
        let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 6, 0, 0];
        ip.extend_from_slice(&[10, 20, 0, 2, 172, 16, 0, 2]);
        let mut tcp = vec![0x95, 0x74, 0x14, 0x51, 1, 2, 3, 4, 0, 0, 0, 0, 0x50, 0x18, 0xfa, 0xf0, 0, 0, 0, 0];
        tcp.extend((0..payload).map(|i| (i * 7 + 3) as u8));
        let mut pseudo: u32 = [0x0a14u32, 0x0002, 0xac10, 0x0002, 6, (20 + payload) as u32].iter().sum();
        while pseudo >> 16 != 0 {
            pseudo = (pseudo & 0xffff) + (pseudo >> 16);
        }
        tcp[16..18].copy_from_slice(&(pseudo as u16).to_be_bytes());
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);
        frame
    }

    #[test]
    fn a_partial_tcp_checksum_is_completed_like_the_kernel_would() {
        for payload in [0, 1, 7, 1448] {
            let mut frame = partial_frame(payload);
            assert!(complete_checksum(&mut frame, 14 + 20, 16));
            let check = u16::from_be_bytes([frame[14 + 20 + 16], frame[14 + 20 + 17]]);
            assert_eq!(check, reference_tcp_checksum(&frame[14..]), "payload {payload}");
        }
    }

    #[test]
    fn offsets_beyond_the_frame_are_left_alone() {
        let mut frame = partial_frame(10);
        let before = frame.clone();
        assert!(!complete_checksum(&mut frame, 100, 16));
        assert_eq!(frame, before);
    }
}
