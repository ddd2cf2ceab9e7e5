/// Shim of srsRAN's umbrella header for the standalone build of the telemetry library (enb-patches/standalone): only
/// srsran_cqi_to_coderate (lib/src/phy/phch/cqi.c of release_23_11), which the exporter calls for a CQI's spectral
/// efficiency. The stand-in returns the same values: 3GPP TS 36.213 Table 7.2.3-1, or Table 7.2.3-2 with
/// use_alt_table, in bit per resource element, 0 past CQI 15. srsRAN's tables hold floats; so does this one.

#ifndef RNF_SHIM_SRSRAN_H
#define RNF_SHIM_SRSRAN_H

#include <cstdint>

inline float srsran_cqi_to_coderate(uint32_t cqi, bool use_alt_table)
{
  static const float table1[16] = {
      0, 0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234,
      5.1152, 5.5547};
  static const float table2[16] = {
      0, 0.1523, 0.3770, 0.8770, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547, 6.2266,
      6.9141, 7.4063};
  if (cqi >= 16) {
    return 0;
  }
  return use_alt_table ? table2[cqi] : table1[cqi];
}

#endif // RNF_SHIM_SRSRAN_H
