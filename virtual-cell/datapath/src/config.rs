//! The datapath's configuration (INTERFACE.md, "Configuration"): one validated structure read from JSON.
//!
//! Unknown keys are errors. Every error names the file and the field, e.g.
//! `cell.json: ues[0].harq_bler: must be at least 0 and below 1, got 1.5`.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::aqm::Discipline;

/// Longest interface name the kernel accepts (IFNAMSIZ - 1).
const IFNAME_MAX: usize = 15;
/// UE indices are `u16` in the packet log.
const UES_MAX: usize = 1024;
/// RFC 8289 4.2, 4.3: CoDel's defaults for the Internet.
const CODEL_TARGET_US: u64 = 5_000;
const CODEL_INTERVAL_US: u64 = 100_000;
/// `mark`'s default threshold: a CUBIC flow keeps the link busy after its decrease (cwnd x 0.7) only if the queue
/// it leaves behind held at least 0.3/0.7 = 43 % of a base RTT, and the virtual cell's default path (10 ms backhaul,
/// 10 ms uplink, 5 ms wired each way) has a 30 ms one: 13 ms, rounded up.
const MARK_THRESHOLD_US: u64 = 15_000;
/// Longest target, interval or threshold: 60 s, as the Python side's delays.
const DISCIPLINE_TIME_MAX_US: u64 = 60_000_000;
/// The ACK Regulator's defaults (ackreg.rs): a tenth of the queue's limit kept free for the forecast's errors; an
/// ACK held at most one round trip; 100 ms for the round trip until one is measured (a wired path's 20-60 ms plus
/// the backhaul, rounded up: overestimated, the regulator only holds more, it never overflows for it).
const ACK_REGULATOR_HEADROOM: f64 = 0.1;
const ACK_REGULATOR_MAX_HOLD_RTTS: f64 = 1.0;
const ACK_REGULATOR_INITIAL_RTT_US: u64 = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    Dedicated,
    RoundRobin,
    MaxCi,
    ProportionalFair,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub tti_us: u64,
    pub report_period_ttis: u64,
    pub scheduler: SchedulerKind,
    pub pf_window_ttis: u64,
    pub seed: u64,
    pub realtime_priority: u32,
    pub keep_cpus_awake: bool,
    pub duration_ms: Option<u64>,
    pub packet_log: Option<PathBuf>,
    pub wired: WiredConfig,
    pub core: CoreConfig,
    pub ues: Vec<UeConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WiredConfig {
    pub netns: String,
    pub server_ifname: String,
    pub core_ifname: String,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub queue_limit_bytes: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    pub netns: String,
    pub ifname: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    pub netns: String,
    pub ifname: String,
    pub ipv4: Ipv4Addr,
    pub trace_file: PathBuf,
    pub backhaul_delay_us: u64,
    /// After the RLC queue: from the TTI that completes an SDU to its write to the UE's TUN (the eNB's transmit
    /// processing, the air and the UE's receive processing); 0 for none.
    #[serde(default)]
    pub delivery_delay_us: u64,
    pub uplink_delay_us: u64,
    pub queue_limit_bytes: u64,
    pub queue_limit_sdus: u64,
    pub harq_bler: f64,
    pub harq_rtt_us: u64,
    /// PDCP's discard timer: an SDU untransmitted this long is discarded; 0 for none.
    #[serde(default)]
    pub discard_timer_us: u64,
    /// The UE's scheduling-request period: its uplink packets leave in bunches (uplink.rs); 0 for none.
    #[serde(default)]
    pub uplink_sr_period_us: u64,
    /// Chained uplink grants (uplink.rs): after each transmission another `uplink_grant_period_us` later with
    /// probability `uplink_grant_chain`; 0 for none.
    #[serde(default)]
    pub uplink_grant_period_us: u64,
    #[serde(default)]
    pub uplink_grant_chain: f64,
    /// The UE's uplink transmissions replayed from a capture (uplink.rs, INTERFACE.md); none when absent.
    #[serde(default)]
    pub uplink_trace_file: Option<PathBuf>,
    /// The RLC queue's discipline (aqm.rs); tail drop when absent.
    #[serde(default)]
    pub queue_discipline: QueueDisciplineConfig,
    /// The ACK Regulator on the UE's uplink ACKs (ackreg.rs); none when absent.
    #[serde(default)]
    pub ack_regulator: Option<AckRegulatorConfig>,
    /// The capacity trace and the replayed uplink transmissions start at the UE's first uplink packet (its
    /// first connection's SYN), not at the datapath's start: a trace taken from a run lines up with its flow.
    #[serde(default)]
    pub trace_starts_at_first_packet: bool,
}

/// `{}` for the defaults, or any of the parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckRegulatorConfig {
    pub headroom_bytes: Option<u64>,
    pub max_hold_rtts: Option<f64>,
    pub initial_rtt_us: Option<u64>,
}

impl AckRegulatorConfig {
    /// The parameters for a queue of `limit_bytes` (0: none) at `tti_us`, or an error naming `field.parameter`.
    pub fn resolve(&self, field: &str, limit_bytes: u64, tti_us: u64) -> Result<crate::ackreg::Params, String> {
        if limit_bytes == 0 {
            return Err(format!("{field}: needs the UE's queue_limit_bytes, the limit it keeps the queue under"));
        }
        let headroom = self.headroom_bytes.unwrap_or((limit_bytes as f64 * ACK_REGULATOR_HEADROOM) as u64);
        if headroom >= limit_bytes {
            return Err(format!(
                "{field}.headroom_bytes: must be below queue_limit_bytes ({limit_bytes}), got {headroom}"
            ));
        }
        let max_hold = self.max_hold_rtts.unwrap_or(ACK_REGULATOR_MAX_HOLD_RTTS);
        if !(max_hold > 0.0 && max_hold <= 100.0) {
            return Err(format!("{field}.max_hold_rtts: must be above 0 and at most 100, got {max_hold}"));
        }
        let rtt = self.initial_rtt_us.unwrap_or(ACK_REGULATOR_INITIAL_RTT_US);
        at_least(&format!("{field}.initial_rtt_us"), rtt, 1)?;
        at_most(&format!("{field}.initial_rtt_us"), rtt, DISCIPLINE_TIME_MAX_US)?;
        Ok(crate::ackreg::Params {
            limit_bytes,
            headroom_bytes: headroom,
            max_hold_rtts: max_hold,
            initial_rtt_ttis: rtt.div_ceil(tti_us),
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisciplineKind {
    #[default]
    TailDrop,
    Codel,
    Mark,
}

impl DisciplineKind {
    fn name(self) -> &'static str {
        match self {
            DisciplineKind::TailDrop => "tail_drop",
            DisciplineKind::Codel => "codel",
            DisciplineKind::Mark => "mark",
        }
    }
}

/// `{"kind": ..., parameters}`: one flat object, so that a wrong value's error names its field; `resolve` checks
/// which parameters the kind takes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDisciplineConfig {
    pub kind: DisciplineKind,
    pub target_us: Option<u64>,
    pub interval_us: Option<u64>,
    pub threshold_us: Option<u64>,
    pub ack_ece: Option<bool>,
}

impl QueueDisciplineConfig {
    /// The discipline, with the defaults filled in, or an error naming `field.parameter`.
    pub fn resolve(&self, field: &str) -> Result<Discipline, String> {
        let kind = self.kind;
        let takes = |parameters: &[&str]| -> Result<(), String> {
            let given = [
                ("target_us", self.target_us.is_some()),
                ("interval_us", self.interval_us.is_some()),
                ("threshold_us", self.threshold_us.is_some()),
                ("ack_ece", self.ack_ece.is_some()),
            ];
            let Some((name, _)) = given.iter().find(|(name, present)| *present && !parameters.contains(name)) else {
                return Ok(());
            };
            let hint =
                if parameters.is_empty() { String::new() } else { format!(" (it takes {})", parameters.join(", ")) };
            Err(format!("{field}.{name}: not a parameter of kind {}{hint}", kind.name()))
        };
        let time = |name: &str, value: Option<u64>, default: u64| -> Result<u64, String> {
            let value = value.unwrap_or(default);
            at_least(&format!("{field}.{name}"), value, 1)?;
            at_most(&format!("{field}.{name}"), value, DISCIPLINE_TIME_MAX_US)?;
            Ok(value)
        };
        match kind {
            DisciplineKind::TailDrop => {
                takes(&[])?;
                Ok(Discipline::TailDrop)
            }
            DisciplineKind::Codel => {
                takes(&["target_us", "interval_us"])?;
                let target = time("target_us", self.target_us, CODEL_TARGET_US)?;
                let interval = time("interval_us", self.interval_us, CODEL_INTERVAL_US)?;
                if target >= interval {
                    return Err(format!("{field}.target_us: must be below interval_us ({interval}), got {target}"));
                }
                Ok(Discipline::CoDel { target_ns: target * 1000, interval_ns: interval * 1000 })
            }
            DisciplineKind::Mark => {
                takes(&["threshold_us", "ack_ece"])?;
                let threshold = time("threshold_us", self.threshold_us, MARK_THRESHOLD_US)?;
                Ok(Discipline::Mark { threshold_ns: threshold * 1000, ack_ece: self.ack_ece.unwrap_or(false) })
            }
        }
    }
}

impl Config {
    /// Reads and validates `path`; the error is one line naming the file and the field.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), io_reason(&e)))?;
        Config::parse(&text).map_err(|e| format!("{}: {}", path.display(), e))
    }

    /// Parses and validates JSON text; the error names the field (`ues[0].harq_bler: ...`).
    pub fn parse(text: &[u8]) -> Result<Config, String> {
        let mut deserializer = serde_json::Deserializer::from_slice(text);
        let config: Config = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." { format!("{inner}") } else { format!("{path}: {inner}") }
        })?;
        deserializer.end().map_err(|e| format!("{e}"))?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        at_least("tti_us", self.tti_us, 100)?;
        at_most("tti_us", self.tti_us, 1_000_000)?;
        at_least("report_period_ttis", self.report_period_ttis, 1)?;
        at_least("pf_window_ttis", self.pf_window_ttis, 1)?;
        at_most("realtime_priority", self.realtime_priority as u64, 99)?;
        if let Some(duration) = self.duration_ms {
            at_least("duration_ms", duration, 1)?;
        }
        if let Some(log) = &self.packet_log {
            if log.as_os_str().is_empty() {
                return Err("packet_log: must be a file path or null, got an empty string".into());
            }
        }
        let w = &self.wired;
        netns_name("wired.netns", &w.netns)?;
        ifname("wired.server_ifname", &w.server_ifname)?;
        ifname("wired.core_ifname", &w.core_ifname)?;
        if w.server_ifname == w.core_ifname {
            return Err(format!(
                "wired.core_ifname: must differ from wired.server_ifname, both are {:?}",
                w.core_ifname
            ));
        }
        at_least("wired.rate_bps", w.rate_bps, 1000)?;
        at_least("wired.queue_limit_bytes", w.queue_limit_bytes, 1)?;
        netns_name("core.netns", &self.core.netns)?;
        ifname("core.ifname", &self.core.ifname)?;
        if self.ues.is_empty() {
            return Err("ues: needs at least one UE".into());
        }
        if self.ues.len() > UES_MAX {
            return Err(format!("ues: at most {UES_MAX} UEs, got {}", self.ues.len()));
        }
        let mut addresses = HashSet::new();
        let mut devices = HashSet::new();
        devices.insert((self.core.netns.as_str(), self.core.ifname.as_str()));
        for (i, ue) in self.ues.iter().enumerate() {
            let field = |name: &str| format!("ues[{i}].{name}");
            netns_name(&field("netns"), &ue.netns)?;
            ifname(&field("ifname"), &ue.ifname)?;
            if !devices.insert((ue.netns.as_str(), ue.ifname.as_str())) {
                return Err(format!(
                    "{}: device {} in namespace {} is already used by the core or an earlier UE",
                    field("ifname"),
                    ue.ifname,
                    ue.netns
                ));
            }
            if !addresses.insert(ue.ipv4) {
                return Err(format!("{}: {} is the address of an earlier UE", field("ipv4"), ue.ipv4));
            }
            if ue.trace_file.as_os_str().is_empty() {
                return Err(format!("{}: must be a file path", field("trace_file")));
            }
            if !(ue.harq_bler >= 0.0 && ue.harq_bler < 1.0) {
                return Err(format!("{}: must be at least 0 and below 1, got {}", field("harq_bler"), ue.harq_bler));
            }
            at_most(&field("uplink_sr_period_us"), ue.uplink_sr_period_us, 1_000_000)?;
            at_most(&field("uplink_grant_period_us"), ue.uplink_grant_period_us, 1_000_000)?;
            if !(ue.uplink_grant_chain >= 0.0 && ue.uplink_grant_chain < 1.0) {
                return Err(format!(
                    "{}: must be at least 0 and below 1, got {}",
                    field("uplink_grant_chain"),
                    ue.uplink_grant_chain
                ));
            }
            if ue.uplink_grant_chain > 0.0 && (ue.uplink_grant_period_us == 0 || ue.uplink_sr_period_us == 0) {
                return Err(format!(
                    "{}: chained grants need uplink_grant_period_us and uplink_sr_period_us",
                    field("uplink_grant_chain")
                ));
            }
            if let Some(path) = &ue.uplink_trace_file {
                if path.as_os_str().is_empty() {
                    return Err(format!("{}: must be a file path", field("uplink_trace_file")));
                }
                if ue.uplink_sr_period_us > 0 {
                    return Err(format!(
                        "{}: replayed transmissions replace scheduling requests: set uplink_sr_period_us to 0",
                        field("uplink_trace_file")
                    ));
                }
            }
            ue.queue_discipline.resolve(&field("queue_discipline"))?;
            if let Some(regulator) = &ue.ack_regulator {
                regulator.resolve(&field("ack_regulator"), ue.queue_limit_bytes, self.tti_us)?;
            }
        }
        Ok(())
    }
}

fn at_least(field: &str, value: u64, minimum: u64) -> Result<(), String> {
    if value < minimum { Err(format!("{field}: must be at least {minimum}, got {value}")) } else { Ok(()) }
}

fn at_most(field: &str, value: u64, maximum: u64) -> Result<(), String> {
    if value > maximum { Err(format!("{field}: must be at most {maximum}, got {value}")) } else { Ok(()) }
}

fn ifname(field: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > IFNAME_MAX || name.contains(['/', ' ', '\0']) || name == "." || name == ".." {
        return Err(format!("{field}: {name:?} is not a Linux interface name (1-{IFNAME_MAX} bytes, no '/' or space)"));
    }
    Ok(())
}

fn netns_name(field: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(format!("{field}: {name:?} is not a namespace name under /run/netns"));
    }
    Ok(())
}

/// The error's text without Rust's ` (os error N)` suffix: `No such file or directory`.
pub fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(end) => text[..end].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn example() -> serde_json::Value {
        serde_json::json!({
            "tti_us": 1000,
            "report_period_ttis": 10,
            "scheduler": "proportional_fair",
            "pf_window_ttis": 100,
            "seed": 1,
            "realtime_priority": 0,
            "keep_cpus_awake": false,
            "duration_ms": null,
            "packet_log": "/tmp/packets.bin",
            "wired": {"netns": "rnf-wire", "server_ifname": "wire-srv", "core_ifname": "wire-core",
                      "rate_bps": 1000000000u64, "delay_us": 5000, "queue_limit_bytes": 1000000},
            "core": {"netns": "rnf-core", "ifname": "srs_spgw_sgi"},
            "ues": [
                {"netns": "rnf-ue1", "ifname": "tun_srsue", "ipv4": "172.16.0.2",
                 "trace_file": "/tmp/ue1.cap",
                 "backhaul_delay_us": 10000, "uplink_delay_us": 10000,
                 "queue_limit_bytes": 300000, "queue_limit_sdus": 0,
                 "harq_bler": 0.0, "harq_rtt_us": 8000}
            ]
        })
    }

    fn parse(value: &serde_json::Value) -> Result<Config, String> {
        Config::parse(value.to_string().as_bytes())
    }

    #[test]
    fn the_interface_example_is_valid() {
        let config = parse(&example()).unwrap();
        assert_eq!(config.scheduler, SchedulerKind::ProportionalFair);
        assert_eq!(config.ues[0].ipv4, Ipv4Addr::new(172, 16, 0, 2));
        assert_eq!(config.duration_ms, None);
        assert_eq!(config.packet_log.as_deref(), Some(Path::new("/tmp/packets.bin")));
    }

    #[test]
    fn an_unknown_key_is_named_with_its_path() {
        let mut value = example();
        value["ues"][0]["harq_blerr"] = serde_json::json!(0.1);
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("ues[0].harq_blerr: unknown field `harq_blerr`"), "{error}");
    }

    #[test]
    fn a_missing_key_is_named_with_its_parent() {
        let mut value = example();
        value["wired"].as_object_mut().unwrap().remove("delay_us");
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("wired: missing field `delay_us`"), "{error}");
    }

    #[test]
    fn a_value_of_the_wrong_type_names_the_field() {
        let mut value = example();
        value["wired"]["rate_bps"] = serde_json::json!("fast");
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("wired.rate_bps: invalid type: string \"fast\""), "{error}");
    }

    #[test]
    fn an_unknown_scheduler_names_the_field_and_the_choices() {
        let mut value = example();
        value["scheduler"] = serde_json::json!("fifo");
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("scheduler: unknown variant `fifo`, expected one of `dedicated`"), "{error}");
    }

    #[test]
    fn a_bad_address_names_the_field() {
        let mut value = example();
        value["ues"][0]["ipv4"] = serde_json::json!("172.16.0.300");
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("ues[0].ipv4: invalid IPv4 address syntax"), "{error}");
    }

    #[test]
    fn out_of_range_values_name_the_field() {
        let cases: [(&str, serde_json::Value, &str); 7] = [
            ("/ues/0/harq_bler", serde_json::json!(1.0), "ues[0].harq_bler: must be at least 0 and below 1, got 1"),
            ("/tti_us", serde_json::json!(0), "tti_us: must be at least 100, got 0"),
            ("/report_period_ttis", serde_json::json!(0), "report_period_ttis: must be at least 1, got 0"),
            ("/pf_window_ttis", serde_json::json!(0), "pf_window_ttis: must be at least 1, got 0"),
            ("/realtime_priority", serde_json::json!(100), "realtime_priority: must be at most 99, got 100"),
            ("/duration_ms", serde_json::json!(0), "duration_ms: must be at least 1, got 0"),
            ("/wired/queue_limit_bytes", serde_json::json!(0), "wired.queue_limit_bytes: must be at least 1, got 0"),
        ];
        for (pointer, bad, expected) in cases {
            let mut value = example();
            *value.pointer_mut(pointer).unwrap() = bad;
            assert_eq!(parse(&value).unwrap_err(), expected);
        }
    }

    #[test]
    fn chained_grants_need_a_probability_below_1_and_their_periods() {
        let mut value = example();
        value["ues"][0]["uplink_grant_chain"] = serde_json::json!(1.0);
        assert_eq!(parse(&value).unwrap_err(), "ues[0].uplink_grant_chain: must be at least 0 and below 1, got 1");
        value["ues"][0]["uplink_grant_chain"] = serde_json::json!(0.5);
        let error = parse(&value).unwrap_err();
        assert_eq!(
            error,
            "ues[0].uplink_grant_chain: chained grants need uplink_grant_period_us and uplink_sr_period_us"
        );
        value["ues"][0]["uplink_grant_period_us"] = serde_json::json!(9000);
        value["ues"][0]["uplink_sr_period_us"] = serde_json::json!(20000);
        assert!(parse(&value).is_ok());
    }

    #[test]
    fn an_uplink_trace_replaces_scheduling_requests() {
        let mut value = example();
        value["ues"][0]["uplink_trace_file"] = serde_json::json!("/tmp/ue1-uplink.bin");
        assert!(parse(&value).is_ok());
        value["ues"][0]["uplink_sr_period_us"] = serde_json::json!(20000);
        assert_eq!(
            parse(&value).unwrap_err(),
            "ues[0].uplink_trace_file: replayed transmissions replace scheduling requests: set uplink_sr_period_us to 0"
        );
        value["ues"][0]["uplink_trace_file"] = serde_json::json!("");
        assert_eq!(parse(&value).unwrap_err(), "ues[0].uplink_trace_file: must be a file path");
    }

    #[test]
    fn a_negative_count_names_the_field() {
        let mut value = example();
        value["ues"][0]["queue_limit_sdus"] = serde_json::json!(-1);
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("ues[0].queue_limit_sdus: invalid value: integer `-1`"), "{error}");
    }

    #[test]
    fn two_ues_may_not_share_an_address_or_a_device() {
        let mut value = example();
        let mut second = value["ues"][0].clone();
        second["netns"] = serde_json::json!("rnf-ue2");
        value["ues"].as_array_mut().unwrap().push(second.clone());
        assert_eq!(parse(&value).unwrap_err(), "ues[1].ipv4: 172.16.0.2 is the address of an earlier UE");
        second["ipv4"] = serde_json::json!("172.16.0.3");
        second["netns"] = serde_json::json!("rnf-ue1");
        value["ues"][1] = second;
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("ues[1].ifname: device tun_srsue in namespace rnf-ue1 is already used"), "{error}");
    }

    #[test]
    fn an_interface_name_longer_than_the_kernel_allows_is_refused() {
        let mut value = example();
        value["core"]["ifname"] = serde_json::json!("a_very_long_ifname");
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with("core.ifname: \"a_very_long_ifname\" is not a Linux interface name"), "{error}");
    }

    #[test]
    fn an_ack_regulator_takes_its_defaults_from_the_queue_limit_and_names_bad_fields() {
        let mut value = example();
        value["ues"][0]["ack_regulator"] = serde_json::json!({});
        let config = parse(&value).unwrap();
        let regulator = config.ues[0].ack_regulator.as_ref().unwrap();
        let params = regulator.resolve("r", 300_000, 1000).unwrap();
        // a tenth of the 300000-byte limit; one round trip; 100 ms at 1 ms TTIs
        assert_eq!(
            params,
            crate::ackreg::Params {
                limit_bytes: 300_000,
                headroom_bytes: 30_000,
                max_hold_rtts: 1.0,
                initial_rtt_ttis: 100
            }
        );
        let r = "ues[0].ack_regulator";
        for (bad, expected) in [
            (
                serde_json::json!({"headroom_bytes": 300_000}),
                format!("{r}.headroom_bytes: must be below queue_limit_bytes (300000), got 300000"),
            ),
            (
                serde_json::json!({"max_hold_rtts": 0.0}),
                format!("{r}.max_hold_rtts: must be above 0 and at most 100, got 0"),
            ),
            (serde_json::json!({"initial_rtt_us": 0}), format!("{r}.initial_rtt_us: must be at least 1, got 0")),
        ] {
            value["ues"][0]["ack_regulator"] = bad;
            assert_eq!(parse(&value).unwrap_err(), expected);
        }
        value["ues"][0]["ack_regulator"] = serde_json::json!({});
        value["ues"][0]["queue_limit_bytes"] = serde_json::json!(0);
        let error = parse(&value).unwrap_err();
        assert!(error.starts_with(&format!("{r}: needs the UE's queue_limit_bytes")), "{error}");
    }

    #[test]
    fn no_ues_is_an_error() {
        let mut value = example();
        value["ues"] = serde_json::json!([]);
        assert_eq!(parse(&value).unwrap_err(), "ues: needs at least one UE");
    }

    #[test]
    fn trailing_text_and_broken_json_are_errors() {
        let mut text = example().to_string();
        text.push_str(" x");
        assert!(Config::parse(text.as_bytes()).unwrap_err().contains("trailing characters"));
        assert!(Config::parse(b"{\"tti_us\": ").unwrap_err().contains("EOF while parsing"));
    }

    fn with_discipline(discipline: serde_json::Value) -> Result<Config, String> {
        let mut value = example();
        value["ues"][0]["queue_discipline"] = discipline;
        parse(&value)
    }

    #[test]
    fn a_queue_discipline_is_tail_drop_unless_given_and_takes_the_rfc_and_documented_defaults() {
        let resolve = |config: Config| config.ues[0].queue_discipline.resolve("q").unwrap();
        assert_eq!(resolve(parse(&example()).unwrap()), Discipline::TailDrop);
        assert_eq!(resolve(with_discipline(json!({"kind": "tail_drop"})).unwrap()), Discipline::TailDrop);
        assert_eq!(
            resolve(with_discipline(json!({"kind": "codel"})).unwrap()),
            Discipline::CoDel { target_ns: 5_000_000, interval_ns: 100_000_000 }
        );
        assert_eq!(
            resolve(with_discipline(json!({"kind": "codel", "target_us": 2000, "interval_us": 50000})).unwrap()),
            Discipline::CoDel { target_ns: 2_000_000, interval_ns: 50_000_000 }
        );
        assert_eq!(
            resolve(with_discipline(json!({"kind": "mark"})).unwrap()),
            Discipline::Mark { threshold_ns: 15_000_000, ack_ece: false }
        );
        assert_eq!(
            resolve(with_discipline(json!({"kind": "mark", "threshold_us": 10000, "ack_ece": true})).unwrap()),
            Discipline::Mark { threshold_ns: 10_000_000, ack_ece: true }
        );
    }

    #[test]
    fn bad_queue_disciplines_name_the_field() {
        let q = "ues[0].queue_discipline";
        let exact = [
            (json!({"kind": "codel", "target_us": 0}), format!("{q}.target_us: must be at least 1, got 0")),
            (
                json!({"kind": "codel", "interval_us": 60_000_001}),
                format!("{q}.interval_us: must be at most 60000000, got 60000001"),
            ),
            (
                json!({"kind": "codel", "target_us": 100_000}),
                format!("{q}.target_us: must be below interval_us (100000), got 100000"),
            ),
            (
                json!({"kind": "codel", "threshold_us": 10_000}),
                format!("{q}.threshold_us: not a parameter of kind codel (it takes target_us, interval_us)"),
            ),
            (
                json!({"kind": "mark", "target_us": 10_000}),
                format!("{q}.target_us: not a parameter of kind mark (it takes threshold_us, ack_ece)"),
            ),
            (json!({"kind": "tail_drop", "ack_ece": false}), format!("{q}.ack_ece: not a parameter of kind tail_drop")),
            (json!({"kind": "mark", "threshold_us": 0}), format!("{q}.threshold_us: must be at least 1, got 0")),
            (
                json!({"kind": "mark", "threshold_us": 60_000_001}),
                format!("{q}.threshold_us: must be at most 60000000, got 60000001"),
            ),
        ];
        for (discipline, expected) in exact {
            assert_eq!(with_discipline(discipline).unwrap_err(), expected);
        }
        let prefixes = [
            (json!({"kind": "red"}), format!("{q}.kind: unknown variant `red`, expected one of `tail_drop`, `codel`")),
            (json!({"kind": "codel", "target_us": -5}), format!("{q}.target_us: invalid value: integer `-5`")),
            (json!({"kind": "mark", "ack_ece": "yes"}), format!("{q}.ack_ece: invalid type: string \"yes\"")),
            (json!({"kind": "codel", "taget_us": 5}), format!("{q}.taget_us: unknown field `taget_us`")),
            (json!({}), format!("{q}: missing field `kind`")),
        ];
        for (discipline, expected) in prefixes {
            let error = with_discipline(discipline).unwrap_err();
            assert!(error.starts_with(&expected), "{error}");
        }
    }

    #[test]
    fn load_names_the_file() {
        let error = Config::load(Path::new("/nonexistent/datapath.json")).unwrap_err();
        assert_eq!(error, "/nonexistent/datapath.json: No such file or directory");
    }
}
