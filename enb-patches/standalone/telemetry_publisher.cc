/// The series' exporter driven line by line from stdin, for tests in other languages: each command calls the UE
/// table's hooks as srsenb's MAC, RLC, PDCP, GTP-U and RRC would, and the exporter publishes on a real ZeroMQ PUB
/// socket. enb-patches/tests/test_standalone.py receives with the Python subscriber (rnf_telemetry).
///
/// Every command answers one line: "ok", a value, or "error: ...". Numbers are decimal or 0x-hexadecimal.
///
///   start ENDPOINT PERIOD_MS CELL_ID     -> "endpoint tcp://127.0.0.1:PORT" (the bound endpoint)
///   add RNTI | rem RNTI                  UE slot claimed (mac::allocate_ue) / released (mac::ue_rem)
///   bearer RNTI LCID LIMIT_SDUS LIMIT_BYTES
///   ip RNTI A.B.C.D                      destination of a downlink IPv4 packet on the UE's GTP-U tunnel
///   queue RNTI LCID NEW_BYTES RETX_BYTES RLC buffer state reaching the MAC
///   sdus RNTI LCID N                     SDUs in the RLC transmit queue
///   drop RNTI LCID BYTES                 an SDU dropped at the full RLC queue
///   cqi RNTI CQI | rlf RNTI 0|1
///   tti TTI                              -> the 64-bit TTI count dl_tti() makes of srsRAN's TTI (0-10239)
///   cell NOF_PRB NOF_CARRIERS            the MAC's cells (mac::cell_cfg): carriers of NOF_PRB PRBs each
///   grant TTI64 CC RNTI PID TBS MCS LCID [RBG_BITMASK]
///                                        one downlink transport block: LCID 3-10 carries that DRB's data (a new
///                                        transmission), "retx" a HARQ retransmission of process PID; on the RBGs of
///                                        RBG_BITMASK (resource allocation type 0, first RBG most significant; none
///                                        when left out) of a carrier of the cell's NOF_PRB
///   stop                                 -> "stopped SENT DROPPED"

#include "srsenb/hdr/stack/telemetry/telemetry_exporter.h"
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

using namespace srsenb::telemetry;

namespace {

bool number(std::istringstream& in, uint64_t& value)
{
  std::string text;
  if (not(in >> text)) {
    return false;
  }
  char* end = nullptr;
  value     = std::strtoull(text.c_str(), &end, 0);
  return end != text.c_str() and *end == '\0';
}

/// Runs one command line; returns the answer.
std::string run(const std::string& line, ue_table& table, std::unique_ptr<exporter>& exp, uint32_t& nof_prb)
{
  std::istringstream in(line);
  std::string        cmd;
  in >> cmd;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  if (cmd == "start") {
    std::string      endpoint, error;
    telemetry_args_t args;
    if (not(in >> endpoint) or not number(in, a) or not number(in, b)) {
      return "error: start ENDPOINT PERIOD_MS CELL_ID";
    }
    args.enable       = true;
    args.zmq_endpoint = endpoint;
    args.period_ms    = static_cast<uint32_t>(a);
    exp.reset(new exporter(table, srslog::fetch_basic_logger("TLM", false)));
    if (not exp->start(args, static_cast<uint32_t>(b), error)) {
      return "error: " + error;
    }
    return "endpoint " + exp->bound_endpoint();
  }
  if (cmd == "stop") {
    if (exp == nullptr) {
      return "error: not started";
    }
    exp->stop();
    return "stopped " + std::to_string(exp->nof_sent()) + " " + std::to_string(exp->nof_dropped());
  }
  if (not number(in, a)) {
    return "error: " + cmd + " needs an RNTI or TTI";
  }
  uint16_t rnti = static_cast<uint16_t>(a);
  if (cmd == "add") {
    table.add_ue(rnti);
  } else if (cmd == "rem") {
    table.rem_ue(rnti);
  } else if (cmd == "bearer" and number(in, b) and number(in, c) and number(in, d)) {
    table.add_bearer(rnti, b, c, d);
  } else if (cmd == "ip") {
    std::string text;
    uint8_t     ip[4] = {};
    if (not(in >> text) or inet_pton(AF_INET, text.c_str(), ip) != 1) {
      return "error: ip RNTI A.B.C.D";
    }
    table.dl_ip_destination(rnti, ip);
  } else if (cmd == "queue" and number(in, b) and number(in, c) and number(in, d)) {
    table.dl_buffer_state(rnti, b, c, d);
  } else if (cmd == "sdus" and number(in, b) and number(in, c)) {
    table.dl_queue_sdus(rnti, b, c);
  } else if (cmd == "drop" and number(in, b) and number(in, c)) {
    table.dl_sdu_dropped(rnti, b, c);
  } else if (cmd == "cqi" and number(in, b)) {
    table.dl_cqi(rnti, b);
  } else if (cmd == "rlf" and number(in, b)) {
    table.radio_link_failure(rnti, b != 0);
  } else if (cmd == "tti") {
    return std::to_string(table.dl_tti(static_cast<uint32_t>(a)));
  } else if (cmd == "cell" and number(in, b)) {
    nof_prb = static_cast<uint32_t>(a);
    table.set_cell_dl_prbs(static_cast<uint32_t>(a * b));
  } else if (cmd == "grant") {
    uint64_t    cc = 0, pid = 0, tbs = 0, mcs = 0, rbgs = 0;
    std::string lcid;
    if (not number(in, cc) or not number(in, b) or not number(in, pid) or not number(in, tbs) or
        not number(in, mcs) or not(in >> lcid) or (not in.eof() and not number(in, rbgs))) {
      return "error: grant TTI64 CC RNTI PID TBS MCS LCID|retx [RBG_BITMASK]";
    }
    srsenb::sched_interface::dl_sched_data_t g = {};
    g.dci.rnti                                 = static_cast<uint16_t>(b);
    g.dci.pid                                  = pid;
    g.dci.alloc_type                           = SRSRAN_RA_ALLOC_TYPE0;
    g.dci.type0_alloc.rbg_bitmask              = static_cast<uint32_t>(rbgs);
    g.dci.tb[0].mcs_idx                        = mcs;
    g.tbs[0]                                   = tbs;
    if (lcid != "retx") {
      // As srsenb's scheduler fills it: the DRB's MAC SDU and a MAC CE's worth of other bytes.
      g.nof_pdu_elems[0] = 1;
      g.pdu[0][0].lcid   = std::strtoul(lcid.c_str(), nullptr, 0);
      g.pdu[0][0].nbytes = tbs > 10 ? tbs - 10 : tbs;
    }
    table.dl_grant(a, cc, nof_prb, g);
  } else {
    return "error: unknown or incomplete command: " + line;
  }
  return "ok";
}

} // namespace

int main()
{
  srslog::init();
  std::unique_ptr<ue_table> table(new ue_table());
  std::unique_ptr<exporter> exp;
  uint32_t                  nof_prb = 0;
  std::string               line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) {
      continue;
    }
    std::printf("%s\n", run(line, *table, exp, nof_prb).c_str());
    std::fflush(stdout);
  }
  if (exp != nullptr) {
    exp->stop();
  }
  return 0;
}
