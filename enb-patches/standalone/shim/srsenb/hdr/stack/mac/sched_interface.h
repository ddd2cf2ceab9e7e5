/// Shim of srsenb's scheduler interface for the standalone build of the telemetry library
/// (enb-patches/standalone): the downlink grant of a scheduling result, with the fields the telemetry's MAC hook
/// reads, under srsRAN's names and types (srsenb/hdr/stack/mac/sched_interface.h, srsran/phy/phch/dci.h,
/// srsran/phy/phch/ra.h, srsran/phy/phch/pdsch_cfg.h and srsran/phy/common/phy_common.h of release_23_11). The real
/// structs have more fields; the hook reads only these. The real header brings in srsran/srsran.h, and with it
/// srsran_ra_dl_grant_to_grant_prb_allocation (lib/src/phy/phch/ra_dl.c), which the hook calls for a grant's PRBs:
/// here a stand-in with the same results for resource allocation type 0 and localized type 2 (what srsenb's
/// scheduler allocates), refusing the others.

#ifndef RNF_SHIM_SCHED_INTERFACE_H
#define RNF_SHIM_SCHED_INTERFACE_H

#include <cstdint>

#define SRSRAN_SUCCESS 0
#define SRSRAN_ERROR -1
#define SRSRAN_MAX_TB 2
#define SRSRAN_MAX_CODEWORDS 2
#define SRSRAN_MAX_PRB 110

typedef enum {
  SRSRAN_DCI_FORMAT0 = 0,
  SRSRAN_DCI_FORMAT1,
  SRSRAN_DCI_FORMAT1A,
  SRSRAN_DCI_FORMAT1C
} srsran_dci_format_t; // srsRAN's has more formats; only 1C changes a type 2 allocation's meaning

typedef enum {
  SRSRAN_RA_ALLOC_TYPE0 = 0,
  SRSRAN_RA_ALLOC_TYPE1 = 1,
  SRSRAN_RA_ALLOC_TYPE2 = 2
} srsran_ra_type_t;

typedef struct {
  uint32_t rbg_bitmask;
} srsran_ra_type0_t;

typedef struct {
  uint32_t vrb_bitmask;
  uint32_t rbg_subset;
  uint32_t shift;
} srsran_ra_type1_t;

typedef struct {
  uint32_t riv;
  enum { SRSRAN_RA_TYPE2_NPRB1A_2 = 0, SRSRAN_RA_TYPE2_NPRB1A_3 = 1 } n_prb1a;
  enum { SRSRAN_RA_TYPE2_NG1 = 0, SRSRAN_RA_TYPE2_NG2 = 1 } n_gap;
  enum { SRSRAN_RA_TYPE2_LOC = 0, SRSRAN_RA_TYPE2_DIST = 1 } mode;
} srsran_ra_type2_t;

typedef struct {
  uint32_t mcs_idx;
  int      rv;
  bool     ndi;
  uint32_t cw_idx;
} srsran_dci_tb_t;

typedef struct {
  uint16_t            rnti;
  srsran_dci_format_t format;
  srsran_ra_type_t    alloc_type;
  union {
    srsran_ra_type0_t type0_alloc;
    srsran_ra_type1_t type1_alloc;
    srsran_ra_type2_t type2_alloc;
  };
  uint32_t        pid;
  srsran_dci_tb_t tb[SRSRAN_MAX_CODEWORDS];
} srsran_dci_dl_t;

typedef struct {
  bool     prb_idx[2][SRSRAN_MAX_PRB];
  uint32_t nof_prb;
} srsran_pdsch_grant_t;

/// As srsRAN's: adds the PRBs of the DCI's allocation on a carrier of `nof_prb` PRBs to `grant` (36.213 7.1.6).
inline int
srsran_ra_dl_grant_to_grant_prb_allocation(const srsran_dci_dl_t* dci, srsran_pdsch_grant_t* grant, uint32_t nof_prb)
{
  // RBG size P (36.213 table 7.1.6.1-1), srsran_ra_type0_P
  uint32_t P = nof_prb <= 10 ? 1 : nof_prb <= 26 ? 2 : nof_prb <= 63 ? 3 : 4;
  if (dci->alloc_type == SRSRAN_RA_ALLOC_TYPE0) {
    // The first RBG is the most significant of the carrier's ceil(nof_prb / P) bits; the last RBG may be shorter.
    uint32_t nb = (nof_prb + P - 1) / P;
    for (uint32_t i = 0; i < nb; i++) {
      if (dci->type0_alloc.rbg_bitmask & (1u << (nb - i - 1))) {
        for (uint32_t j = 0; j < P and i * P + j < nof_prb; j++) {
          grant->prb_idx[0][i * P + j] = true;
          grant->nof_prb++;
        }
      }
    }
    return SRSRAN_SUCCESS;
  }
  if (dci->alloc_type == SRSRAN_RA_ALLOC_TYPE2 and dci->type2_alloc.mode == srsran_ra_type2_t::SRSRAN_RA_TYPE2_LOC and
      dci->format != SRSRAN_DCI_FORMAT1C) {
    // srsran_ra_type2_from_riv with nof_vrb = nof_prb
    uint32_t L_crb = dci->type2_alloc.riv / nof_prb + 1, RB_start = dci->type2_alloc.riv % nof_prb;
    if (L_crb > nof_prb - RB_start) {
      L_crb    = nof_prb - dci->type2_alloc.riv / nof_prb + 1;
      RB_start = nof_prb - dci->type2_alloc.riv % nof_prb - 1;
    }
    for (uint32_t i = 0; i < L_crb; i++) {
      grant->prb_idx[0][i + RB_start] = true;
      grant->nof_prb++;
    }
    return SRSRAN_SUCCESS;
  }
  return SRSRAN_ERROR; // not allocated by srsenb's scheduler: not in this stand-in
}

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
