//! The IPv4 and TCP header bits the queue disciplines read and write (aqm.rs): the ECN field of the TOS byte
//! (RFC 3168 5), the TCP ECE flag (RFC 3168 6.1), and the checksums they change (RFC 1071, RFC 1624). Packets are
//! whole IP packets as the TUN devices carry them (`IFF_NO_PI`); anything else is left alone.

/// The ECN field's code points (RFC 3168 5): the two low bits of the TOS byte.
const ECN_MASK: u8 = 0b11;
const ECT_1: u8 = 0b01;
const ECT_0: u8 = 0b10;
const CE: u8 = 0b11;

const PROTOCOL_TCP: u8 = 6;
const TCP_HEADER_MIN: usize = 20;
const TCP_ECE: u8 = 0x40;
pub(crate) const TCP_ACK: u8 = 0x10;
pub(crate) const TCP_RST: u8 = 0x04;
const TCP_SYN: u8 = 0x02;

/// A TCP connection seen from the UE: the remote (server) address and port, and the UE's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flow {
    pub remote: [u8; 4],
    pub remote_port: u16,
    pub local_port: u16,
}

/// The header length of an IPv4 packet whose whole header is present.
pub(crate) fn ipv4_header_len(packet: &[u8]) -> Option<usize> {
    let first = *packet.first()?;
    let len = usize::from(first & 0x0f) * 4;
    (first >> 4 == 4 && len >= 20 && packet.len() >= len).then_some(len)
}

/// An IPv4 packet whose ECN field says ECT(0) or ECT(1): its sender takes CE as a congestion signal.
pub fn ecn_capable(packet: &[u8]) -> bool {
    ipv4_header_len(packet).is_some() && matches!(packet[1] & ECN_MASK, ECT_0 | ECT_1)
}

/// Marks an ECN-capable IPv4 packet CE and recomputes its header checksum; anything else stays as it is (false).
pub fn mark_ce(packet: &mut [u8]) -> bool {
    if !ecn_capable(packet) {
        return false;
    }
    let Some(len) = ipv4_header_len(packet) else { return false };
    packet[1] |= CE;
    packet[10..12].fill(0);
    let checksum = !ones_complement_sum(&packet[..len]);
    packet[10..12].copy_from_slice(&checksum.to_be_bytes());
    true
}

/// The offset of the TCP header of an IPv4 TCP packet that carries one whole (not a later fragment).
pub(crate) fn tcp_offset(packet: &[u8]) -> Option<usize> {
    let ihl = ipv4_header_len(packet)?;
    let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
    (packet[9] == PROTOCOL_TCP && fragment_offset == 0 && packet.len() >= ihl + TCP_HEADER_MIN).then_some(ihl)
}

/// The flow of a downlink TCP packet (server to UE).
pub fn downlink_flow(packet: &[u8]) -> Option<Flow> {
    let tcp = tcp_offset(packet)?;
    Some(Flow {
        remote: [packet[12], packet[13], packet[14], packet[15]],
        remote_port: u16::from_be_bytes([packet[tcp], packet[tcp + 1]]),
        local_port: u16::from_be_bytes([packet[tcp + 2], packet[tcp + 3]]),
    })
}

/// The flow of an uplink TCP segment (UE to server) that acknowledges data: ACK set, neither SYN (where ECE takes
/// part in ECN's negotiation, RFC 3168 6.1.1) nor RST.
pub fn acknowledging_flow(packet: &[u8]) -> Option<Flow> {
    let tcp = tcp_offset(packet)?;
    let flags = packet[tcp + 13];
    if flags & TCP_ACK == 0 || flags & (TCP_SYN | TCP_RST) != 0 {
        return None;
    }
    Some(Flow {
        remote: [packet[16], packet[17], packet[18], packet[19]],
        remote_port: u16::from_be_bytes([packet[tcp + 2], packet[tcp + 3]]),
        local_port: u16::from_be_bytes([packet[tcp], packet[tcp + 1]]),
    })
}

/// Sets ECE on an IPv4 TCP segment that does not carry it yet, updating the TCP checksum incrementally (RFC 1624
/// 3, eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the flags); false when there is nothing to set.
pub fn set_ece(packet: &mut [u8]) -> bool {
    let Some(tcp) = tcp_offset(packet) else { return false };
    let flags = packet[tcp + 13];
    if flags & TCP_ECE != 0 {
        return false;
    }
    let old = u16::from_be_bytes([packet[tcp + 12], flags]);
    let new = old | u16::from(TCP_ECE);
    packet[tcp + 13] = flags | TCP_ECE;
    let checksum = u16::from_be_bytes([packet[tcp + 16], packet[tcp + 17]]);
    let updated = !ones_complement_add(ones_complement_add(!checksum, !old), new);
    packet[tcp + 16..tcp + 18].copy_from_slice(&updated.to_be_bytes());
    true
}

fn ones_complement_add(a: u16, b: u16) -> u16 {
    let sum = u32::from(a) + u32::from(b);
    ((sum & 0xffff) + (sum >> 16)) as u16
}

/// The one's-complement sum of `bytes` as big-endian 16-bit words (RFC 1071), an odd last byte padded with zero.
fn ones_complement_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for word in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([word[0], *word.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Packets built by hand for the tests of the disciplines, with checksums computed here, apart from the code under
/// test.
#[cfg(test)]
pub(crate) mod packets {
    /// Adds up 16-bit big-endian words with end-around carry, the straightforward way.
    pub fn checksum_of(bytes: &[u8]) -> u16 {
        let mut total: u64 = 0;
        let mut i = 0;
        while i < bytes.len() {
            let high = bytes[i] as u64;
            let low = if i + 1 < bytes.len() { bytes[i + 1] as u64 } else { 0 };
            total += high * 256 + low;
            i += 2;
        }
        while total > 0xffff {
            total = (total % 0x10000) + (total / 0x10000);
        }
        !(total as u16)
    }

    /// A header whose checksum field is right adds up to 0xffff, i.e. its checksum over everything is 0.
    pub fn ipv4_header_is_valid(packet: &[u8]) -> bool {
        let len = (packet[0] & 0x0f) as usize * 4;
        checksum_of(&packet[..len]) == 0
    }

    /// The TCP checksum over the pseudo-header (source, destination, zero, protocol, TCP length) and the segment.
    pub fn tcp_is_valid(packet: &[u8]) -> bool {
        let ihl = (packet[0] & 0x0f) as usize * 4;
        let segment = &packet[ihl..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&packet[12..20]);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(segment);
        checksum_of(&pseudo) == 0
    }

    /// An IPv4 packet of `len` bytes (UDP, payload `tag`) with TOS `tos`, from 10.20.0.2 to 172.16.0.2.
    pub fn ipv4(len: usize, tos: u8, tag: u8) -> Vec<u8> {
        let mut packet = vec![tag; len];
        packet[..20]
            .copy_from_slice(&[0x45, tos, 0, 0, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 20, 0, 2, 172, 16, 0, 2]);
        packet[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        let checksum = checksum_of(&packet[..20]);
        packet[10..12].copy_from_slice(&checksum.to_be_bytes());
        packet
    }

    /// An IPv4 TCP segment with TOS `tos`, ports and flags, 10 payload bytes, checksums computed here.
    pub fn tcp(source: [u8; 4], destination: [u8; 4], ports: (u16, u16), flags: u8, tos: u8) -> Vec<u8> {
        let mut packet = ipv4(50, tos, 0xab);
        packet[9] = 6;
        packet[12..16].copy_from_slice(&source);
        packet[16..20].copy_from_slice(&destination);
        packet[10..12].fill(0);
        let checksum = checksum_of(&packet[..20]);
        packet[10..12].copy_from_slice(&checksum.to_be_bytes());
        let segment = &mut packet[20..40];
        segment.fill(0);
        segment[0..2].copy_from_slice(&ports.0.to_be_bytes());
        segment[2..4].copy_from_slice(&ports.1.to_be_bytes());
        segment[4..8].copy_from_slice(&1000u32.to_be_bytes());
        segment[12] = 5 << 4;
        segment[13] = flags;
        segment[14..16].copy_from_slice(&65535u16.to_be_bytes());
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&packet[12..20]);
        pseudo.extend_from_slice(&[0, 6, 0, 30]);
        pseudo.extend_from_slice(&packet[20..]);
        let checksum = checksum_of(&pseudo);
        packet[36..38].copy_from_slice(&checksum.to_be_bytes());
        packet
    }
}

#[cfg(test)]
mod tests {
    use super::packets::*;
    use super::*;

    const SERVER: [u8; 4] = [10, 20, 0, 2];
    const UE: [u8; 4] = [172, 16, 0, 2];

    #[test]
    fn the_test_packets_are_valid_to_begin_with() {
        assert!(ipv4_header_is_valid(&ipv4(100, 0x02, 1)));
        let segment = tcp(SERVER, UE, (5201, 40000), 0x18, 0x02);
        assert!(ipv4_header_is_valid(&segment) && tcp_is_valid(&segment));
    }

    #[test]
    fn ect_0_and_ect_1_packets_are_marked_ce_with_a_valid_header_checksum() {
        // TOS 0xb8 (DSCP EF) with ECT(0): 0xba -> 0xbb; TOS ECT(1) 0x01 -> 0x03
        for (tos, marked) in [(0xba, 0xbb), (0x01, 0x03)] {
            let mut packet = ipv4(1500, tos, 7);
            assert!(ecn_capable(&packet));
            assert!(mark_ce(&mut packet));
            assert_eq!(packet[1], marked);
            assert!(ipv4_header_is_valid(&packet), "TOS {tos:#x}");
            assert_eq!(&packet[20..], &[7; 1480][..], "payload untouched");
        }
    }

    #[test]
    fn not_ect_ce_and_non_ipv4_packets_are_left_alone() {
        for tos in [0x00, 0xb8, 0x03] {
            let mut packet = ipv4(60, tos, 1);
            let before = packet.clone();
            assert!(!mark_ce(&mut packet), "TOS {tos:#x}");
            assert_eq!(packet, before);
        }
        let mut ipv6 = vec![0x60; 60];
        ipv6[1] = 0x02;
        assert!(!ecn_capable(&ipv6) && !mark_ce(&mut ipv6));
        let mut truncated = ipv4(60, 0x02, 1);
        truncated.truncate(19);
        assert!(!mark_ce(&mut truncated));
    }

    #[test]
    fn ece_is_set_on_an_ack_with_a_valid_tcp_checksum_and_only_once() {
        let mut ack = tcp(UE, SERVER, (40000, 5201), 0x10, 0x00);
        assert_eq!(acknowledging_flow(&ack), Some(Flow { remote: SERVER, remote_port: 5201, local_port: 40000 }));
        assert!(set_ece(&mut ack));
        assert_eq!(ack[33], 0x50);
        assert!(tcp_is_valid(&ack) && ipv4_header_is_valid(&ack));
        assert!(!set_ece(&mut ack));
        assert_eq!(ack[33], 0x50);
    }

    #[test]
    fn the_downlink_flow_and_the_flow_its_acks_acknowledge_are_the_same() {
        let data = tcp(SERVER, UE, (5201, 40000), 0x18, 0x02);
        let ack = tcp(UE, SERVER, (40000, 5201), 0x10, 0x00);
        assert_eq!(downlink_flow(&data), acknowledging_flow(&ack));
        assert!(downlink_flow(&data).is_some());
    }

    #[test]
    fn syn_rst_and_segments_without_ack_acknowledge_nothing() {
        for flags in [0x02, 0x12, 0x14, 0x04, 0x08] {
            assert_eq!(acknowledging_flow(&tcp(UE, SERVER, (40000, 5201), flags, 0)), None, "flags {flags:#x}");
        }
        let mut later_fragment = tcp(UE, SERVER, (40000, 5201), 0x10, 0);
        later_fragment[7] = 1;
        assert_eq!(acknowledging_flow(&later_fragment), None);
        assert_eq!(downlink_flow(&ipv4(60, 0x02, 1)), None, "UDP");
    }
}
