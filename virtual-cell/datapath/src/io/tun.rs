//! Attaching to an existing persistent TUN device (`IFF_TUN | IFF_NO_PI`), non-blocking.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::netns::ifindex;
use super::reason;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca; // _IOW('T', 202, int)
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
}

impl Tun {
    /// Attaches to TUN device `ifname` in the calling thread's namespace. It must exist already:
    /// `TUNSETIFF` would otherwise create a new, non-persistent one.
    pub fn attach(ifname: &str) -> Result<Tun, String> {
        if ifindex(ifname).is_none() {
            return Err(format!("no device {ifname}"));
        }
        let path = CString::new("/dev/net/tun").unwrap();
        // SAFETY: valid path; the result is a new fd we own.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!("/dev/net/tun: {}", reason(&std::io::Error::last_os_error())));
        }
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut request = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
        for (slot, byte) in request.name.iter_mut().zip(ifname.bytes()) {
            *slot = byte as libc::c_char;
        }
        // SAFETY: `request` is a valid ifreq-sized buffer for TUNSETIFF.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut request) } < 0 {
            let error = std::io::Error::last_os_error();
            return Err(match error.raw_os_error() {
                Some(libc::EBUSY) => format!("TUN device {ifname} is already attached to another process"),
                Some(libc::EINVAL) => {
                    format!("{ifname} is not a single-queue TUN device (TAP, multi-queue or not TUN)")
                }
                _ => format!("cannot attach to TUN device {ifname}: {}", reason(&error)),
            });
        }
        Ok(Tun { fd })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
