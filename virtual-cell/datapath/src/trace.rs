//! Capacity traces (INTERFACE.md, "Capacity trace file"): little-endian `u32` bytes per TTI, looped.

use std::path::Path;

/// The entry that marks an outage TTI: no capacity, outage flag set.
pub const OUTAGE: u32 = 0xFFFF_FFFF;

/// What the air interface offers one UE in one TTI if the whole TTI is given to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    pub bytes: u32,
    pub outage: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    entries: Vec<u32>,
}

impl Trace {
    /// A trace from its entries; `None` when empty.
    pub fn new(entries: Vec<u32>) -> Option<Trace> {
        if entries.is_empty() { None } else { Some(Trace { entries }) }
    }

    /// Decodes the file format; the error says what is wrong (the caller adds the file name).
    pub fn decode(bytes: &[u8]) -> Result<Trace, String> {
        if bytes.len() % 4 != 0 {
            return Err(format!(
                "{} bytes is not a whole number of little-endian u32 entries (4 bytes each)",
                bytes.len()
            ));
        }
        let entries = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        Trace::new(entries).ok_or_else(|| "empty trace: it needs at least one TTI".to_string())
    }

    /// Reads a trace file; the error names the file.
    pub fn load(path: &Path) -> Result<Trace, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), crate::config::io_reason(&e)))?;
        Trace::decode(&bytes).map_err(|e| format!("{}: {}", path.display(), e))
    }

    /// The capacity of TTI `tti` (0-based from the datapath's start): entry `tti mod N`.
    pub fn at(&self, tti: u64) -> Capacity {
        let entry = self.entries[(tti % self.entries.len() as u64) as usize];
        if entry == OUTAGE { Capacity { bytes: 0, outage: true } } else { Capacity { bytes: entry, outage: false } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(entries: &[u32]) -> Vec<u8> {
        entries.iter().flat_map(|e| e.to_le_bytes()).collect()
    }

    #[test]
    fn entries_are_little_endian_and_the_trace_loops() {
        let trace = Trace::decode(&encode(&[1250, 70000, OUTAGE])).unwrap();
        assert_eq!(trace.entries.len(), 3);
        assert_eq!(trace.at(0), Capacity { bytes: 1250, outage: false });
        assert_eq!(trace.at(1), Capacity { bytes: 70000, outage: false });
        assert_eq!(trace.at(2), Capacity { bytes: 0, outage: true });
        assert_eq!(trace.at(3), Capacity { bytes: 1250, outage: false });
        assert_eq!(trace.at(3_000_000_001), trace.at(3_000_000_001 % 3));
    }

    #[test]
    fn a_file_with_a_partial_entry_is_refused() {
        let error = Trace::decode(&[1, 2, 3, 4, 5]).unwrap_err();
        assert_eq!(error, "5 bytes is not a whole number of little-endian u32 entries (4 bytes each)");
    }

    #[test]
    fn an_empty_file_is_refused() {
        assert_eq!(Trace::decode(&[]).unwrap_err(), "empty trace: it needs at least one TTI");
    }

    #[test]
    fn load_names_the_missing_file() {
        assert_eq!(
            Trace::load(Path::new("/nonexistent/ue1.cap")).unwrap_err(),
            "/nonexistent/ue1.cap: No such file or directory"
        );
    }

    #[test]
    fn load_reads_a_real_file() {
        let path = std::env::temp_dir().join(format!("rnf-cell-dp-trace-{}.cap", std::process::id()));
        std::fs::write(&path, encode(&[7, OUTAGE])).unwrap();
        let trace = Trace::load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(trace.at(0).bytes, 7);
        assert!(trace.at(1).outage);
    }
}
