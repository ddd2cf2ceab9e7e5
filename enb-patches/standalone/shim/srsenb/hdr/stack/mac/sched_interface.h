/// Shim of srsenb's scheduler interface for the standalone build of the telemetry library
/// (enb-patches/standalone): the downlink grant of a scheduling result, with the fields the telemetry's MAC hook
/// reads, under srsRAN's names and types (srsenb/hdr/stack/mac/sched_interface.h, srsran/phy/phch/dci.h and
/// srsran/phy/common/phy_common.h of release_23_11). The real structs have more fields; the hook reads only these.

#ifndef RNF_SHIM_SCHED_INTERFACE_H
#define RNF_SHIM_SCHED_INTERFACE_H

#include <cstdint>

#define SRSRAN_MAX_TB 2
#define SRSRAN_MAX_CODEWORDS 2

typedef struct {
  uint32_t mcs_idx;
  int      rv;
  bool     ndi;
  uint32_t cw_idx;
} srsran_dci_tb_t;

typedef struct {
  uint16_t        rnti;
  uint32_t        pid;
  srsran_dci_tb_t tb[SRSRAN_MAX_CODEWORDS];
} srsran_dci_dl_t;

namespace srsenb {

class sched_interface
{
public:
  const static int MAX_RLC_PDU_LIST = 8;

  typedef struct {
    uint32_t lcid;
    uint32_t nbytes;
  } dl_sched_pdu_t;

  struct dl_sched_data_t {
    srsran_dci_dl_t dci;
    uint32_t        tbs[SRSRAN_MAX_TB];
    bool            mac_ce_ta;
    bool            mac_ce_rnti;
    uint32_t        nof_pdu_elems[SRSRAN_MAX_TB];
    dl_sched_pdu_t  pdu[SRSRAN_MAX_TB][MAX_RLC_PDU_LIST];
  };
};

} // namespace srsenb

#endif // RNF_SHIM_SCHED_INTERFACE_H
