/// The series' UE table (telemetry_ue_table) under concurrent writers and one reader, as srsenb drives it:
///
/// - PHY workers (threads) schedule adjacent TTIs in parallel: each extends srsRAN's 10240-wrapping TTI with
///   dl_tti() and reports grants, drops, CQI and the RLC buffer state of the same UEs, and the end of the TTI's
///   scheduling (dl_tti_scheduled: every DRB with an empty queue counts the TTI and the PRBs no grant used), all
///   at once;
/// - the stack thread claims and releases UE slots (with their bearers and IP addresses) and toggles radio link
///   failure, meanwhile;
/// - one reader (the exporter's role) reads the occupied slots in a loop.
///
/// The reader checks what one snapshot may show: cumulative counters never go back, a slot of a UE the workers
/// never touch holds nothing of theirs, an active bearer has the limits its UE was given, a valid IP is that UE's.
/// At the end every total is exact: no update lost to contention. Built twice by the Makefile, plain and with
/// -fsanitize=thread, so that a non-atomic access added to the table shows as a race.
///
/// Usage: ue_table_stress [ROUNDS]   (exit status 0 when every check holds)

#include "srsenb/hdr/stack/telemetry/telemetry_ue_table.h"
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace srsenb::telemetry;
using srsenb::sched_interface;

namespace {

constexpr uint32_t nof_workers = 3;
constexpr uint32_t nof_stable  = 4;
// 0x46, 0xc6 and 0x1046 share a home slot (rnti % 128), so lookups probe past each other and past churned slots.
constexpr uint16_t stable_rnti[nof_stable] = {0x46, 0x47, 0xc6, 0x1046};
constexpr uint16_t first_churn_rnti        = 0x2000;
// All workers add to the same counters: scheduled bytes go to DRB 3 or 4 (by round), drops to DRB 3. Each worker
// keeps a HARQ process of its own, and writes the RLC buffer state of a DRB of its own (3, 4, 5), so that the last
// value of each queue field has one writer and is known.
constexpr uint32_t tbs_new        = 1000;
constexpr uint32_t tbs_retx       = 700;
constexpr uint32_t nof_prb        = 25; // RBGs of 2 PRBs, the last one of 1
constexpr uint32_t tti_wrap       = 10240;
constexpr uint32_t barrier_rounds = 64; // PHY workers stay within 64 * 3 TTIs of each other (srsRAN: a few)
constexpr uint32_t max_live_churn = 40;
// A DRB of each stable UE that never has data: every TTI's scheduling finds it empty. A worker reports the end of
// its TTI's scheduling every 8th round: it reads every occupied slot, the stress's cost under ThreadSanitizer.
constexpr uint32_t idle_lcid       = 7;
constexpr uint64_t scheduled_every = 8;

/// A TTI's scheduling result as dl_tti_scheduled reads it (srsenb's sched_interface::dl_sched_res_t).
struct tti_result {
  struct common_grant {
    srsran_dci_dl_t dci;
  };
  std::vector<sched_interface::dl_sched_data_t> data;
  std::vector<common_grant>                     rar;
  std::vector<common_grant>                     bc;
};

std::atomic<uint32_t> failures{0};

#define CHECK(cond)                                                                                                    \
  do {                                                                                                                 \
    if (!(cond) && failures.fetch_add(1) < 20) {                                                                       \
      std::fprintf(stderr, "ue_table_stress: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                 \
    }                                                                                                                  \
  } while (0)

class barrier
{
public:
  explicit barrier(uint32_t parties_) : parties(parties_) {}
  void wait()
  {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t                     gen = generation;
    if (++arrived == parties) {
      arrived = 0;
      ++generation;
      cvar.notify_all();
    } else {
      cvar.wait(lock, [&]() { return generation != gen; });
    }
  }

private:
  std::mutex              mutex;
  std::condition_variable cvar;
  uint32_t                parties;
  uint32_t                arrived    = 0;
  uint64_t                generation = 0;
};

uint32_t drb_of(uint32_t worker)
{
  return first_drb_lcid + worker;
}

constexpr uint32_t drop_lcid = 3;

/// The DRB a new transmission of this round carries.
uint32_t new_tx_drb(uint64_t round)
{
  return first_drb_lcid + static_cast<uint32_t>((round / (2 * nof_stable)) % 2);
}

bool is_new_tx(uint64_t round)
{
  // Each UE gets a new transmission from every worker first, then alternately retransmissions and new ones.
  return (round / nof_stable) % 2 == 0;
}

uint32_t mcs_of(uint64_t round, uint32_t worker)
{
  return static_cast<uint32_t>((round + worker) % 29);
}

uint32_t cqi_of(uint64_t round, uint32_t worker)
{
  return static_cast<uint32_t>((round * 7 + worker) % 16);
}

/// The last worker + 1 RBGs of the carrier: 2 * worker + 1 PRBs.
uint32_t rbgs_of(uint32_t worker)
{
  return (1u << (worker + 1)) - 1;
}

uint32_t prbs_of(uint32_t worker)
{
  return 2 * worker + 1;
}

sched_interface::dl_sched_data_t make_grant(uint16_t rnti, uint32_t worker, uint64_t round)
{
  sched_interface::dl_sched_data_t g = {};
  g.dci.rnti                         = rnti;
  g.dci.pid                          = worker;
  g.dci.alloc_type                   = SRSRAN_RA_ALLOC_TYPE0;
  g.dci.type0_alloc.rbg_bitmask      = rbgs_of(worker);
  g.dci.tb[0].mcs_idx                = mcs_of(round, worker);
  if (is_new_tx(round)) {
    g.tbs[0]           = tbs_new;
    g.nof_pdu_elems[0] = 2;
    g.pdu[0][0].lcid   = new_tx_drb(round);
    g.pdu[0][0].nbytes = tbs_new - 20;
    g.pdu[0][1].lcid   = 1; // SRB1 bytes in the same transport block
    g.pdu[0][1].nbytes = 10;
  } else {
    g.tbs[0] = tbs_retx; // a HARQ retransmission carries no PDU list
  }
  return g;
}

std::array<uint8_t, 4> ip_of(uint16_t rnti)
{
  return {10, 45, static_cast<uint8_t>(rnti >> 8), static_cast<uint8_t>(rnti & 0xff)};
}

void worker(ue_table& table, barrier& sync, uint32_t w, uint64_t rounds)
{
  tti_result result;
  result.data.resize(1);
  for (uint64_t r = 0; r < rounds; ++r) {
    if (r % barrier_rounds == 0) {
      sync.wait();
    }
    uint64_t index = r * nof_workers + w;
    uint64_t tti   = table.dl_tti(static_cast<uint32_t>(index % tti_wrap));
    CHECK(tti == index);

    uint16_t rnti = stable_rnti[r % nof_stable];
    uint32_t lcid = drb_of(w);
    result.data[0] = make_grant(rnti, w, r);
    table.dl_grant(tti, 0, nof_prb, result.data[0]);
    table.dl_sdu_dropped(rnti, drop_lcid, 100 + w);
    table.dl_cqi(rnti, cqi_of(r, w));
    table.dl_buffer_state(rnti, lcid, static_cast<uint32_t>(r), w);
    table.dl_queue_sdus(rnti, lcid, static_cast<uint32_t>(r));
    if (r % scheduled_every == 0) {
      table.dl_tti_scheduled(0, nof_prb, result);
    }
  }
}

/// Claims and releases UE slots, as the MAC and RRC do on the stack thread, until `stop`.
void stack_thread(ue_table& table, const std::atomic<bool>& stop, uint64_t& churned, uint64_t& rlf_events)
{
  std::deque<uint16_t> live;
  uint16_t             next = first_churn_rnti;
  while (not stop.load(std::memory_order_relaxed)) {
    uint16_t rnti = next;
    next          = next == 0xffff ? first_churn_rnti : static_cast<uint16_t>(next + 1);
    table.add_ue(rnti);
    table.add_bearer(rnti, 3, rnti, 2u * rnti);
    std::array<uint8_t, 4> ip = ip_of(rnti);
    table.dl_ip_destination(rnti, ip.data());
    live.push_back(rnti);
    if (live.size() > max_live_churn) {
      table.rem_ue(live.front());
      live.pop_front();
    }
    churned++;
    table.radio_link_failure(stable_rnti[0], (churned % 2) == 1);
    rlf_events += churned % 2;
    if (churned % 64 == 0) {
      std::this_thread::yield();
    }
  }
  table.radio_link_failure(stable_rnti[0], false);
  for (uint16_t rnti : live) {
    table.rem_ue(rnti);
  }
}

bool is_stable(uint16_t rnti, uint32_t& k)
{
  for (k = 0; k < nof_stable; ++k) {
    if (stable_rnti[k] == rnti) {
      return true;
    }
  }
  return false;
}

void check_not_decreasing(const ue_snapshot_t& prev, const ue_snapshot_t& s)
{
  CHECK(s.generation == prev.generation);
  CHECK(s.grant_ttis >= prev.grant_ttis);
  CHECK(s.grant_prbs >= prev.grant_prbs);
  CHECK(s.mcs_sum >= prev.mcs_sum);
  CHECK(s.cqi_reports >= prev.cqi_reports);
  CHECK(s.cqi_sum >= prev.cqi_sum);
  CHECK(s.outage_events >= prev.outage_events);
  for (uint32_t lcid = 0; lcid < nof_lcids; ++lcid) {
    const bearer_snapshot_t &b = s.bearers[lcid], &p = prev.bearers[lcid];
    CHECK(b.sched_new_bytes >= p.sched_new_bytes);
    CHECK(b.sched_retx_bytes >= p.sched_retx_bytes);
    CHECK(b.dropped_sdus >= p.dropped_sdus);
    CHECK(b.dropped_bytes >= p.dropped_bytes);
    CHECK(b.queue_sdus >= p.queue_sdus); // one writer per bearer, writing 0, 1, 2, ...
    CHECK(b.queue_new_bytes >= p.queue_new_bytes);
    CHECK(b.idle_ttis >= p.idle_ttis);
    CHECK(b.idle_prbs >= p.idle_prbs);
  }
}

void check_churned(uint16_t rnti, const ue_snapshot_t& s)
{
  CHECK(rnti >= first_churn_rnti);
  CHECK(s.grant_ttis == 0 and s.grant_prbs == 0 and s.mcs_sum == 0 and s.cqi_reports == 0 and s.outage_events == 0);
  for (const bearer_snapshot_t& b : s.bearers) {
    CHECK(b.sched_new_bytes == 0 and b.sched_retx_bytes == 0 and b.dropped_sdus == 0 and b.queue_sdus == 0);
  }
  if (s.bearers[3].active) {
    CHECK(s.bearers[3].limit_sdus == rnti and s.bearers[3].limit_bytes == 2u * rnti);
  }
  if (s.ue_ip_valid) {
    CHECK(s.ue_ipv4 == ip_of(rnti));
  }
}

/// Reads the occupied slots as the exporter does, until `stop`; returns the number of snapshots taken.
uint64_t reader(const ue_table& table, const std::atomic<bool>& stop)
{
  std::map<uint16_t, ue_snapshot_t> last;
  uint64_t                          reads = 0;
  ue_snapshot_t                     s;
  while (not stop.load(std::memory_order_relaxed)) {
    for (uint32_t word = 0; word < max_ues / 64; ++word) {
      for (uint64_t bits = table.occupied(word); bits != 0; bits &= bits - 1) {
        uint32_t idx = word * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
        if (not table.read(idx, s)) {
          continue; // released (and maybe claimed again) while it was read
        }
        reads++;
        uint32_t k = 0;
        if (is_stable(s.rnti, k)) {
          auto it = last.find(s.rnti);
          if (it != last.end()) {
            check_not_decreasing(it->second, s);
          }
          last[s.rnti] = s;
        } else {
          check_churned(s.rnti, s);
        }
      }
    }
  }
  return reads;
}

ue_snapshot_t snapshot_of(const ue_table& table, uint16_t rnti)
{
  ue_snapshot_t s;
  for (uint32_t idx = 0; idx < max_ues; ++idx) {
    if (table.read(idx, s) and s.rnti == rnti) {
      return s;
    }
  }
  CHECK(false && "UE not found");
  return s;
}

/// The totals the workers' schedule adds up to, counted here from the schedule alone.
void check_totals(const ue_table& table, uint64_t rounds, uint64_t rlf_events)
{
  for (uint32_t k = 0; k < nof_stable; ++k) {
    uint64_t grants = 0, prbs = 0, mcs = 0, cqis = 0, cqi_sum = 0, drops = 0, drop_bytes = 0, unused_prbs = 0;
    uint64_t new_bytes[nof_lcids] = {}, retx_bytes[nof_lcids] = {};
    uint64_t last_round[nof_workers] = {};
    uint32_t harq_drb[nof_workers]   = {};
    for (uint64_t r = k; r < rounds; r += nof_stable) {
      for (uint32_t w = 0; w < nof_workers; ++w) {
        grants++;
        prbs += prbs_of(w);
        mcs += mcs_of(r, w);
        cqis++;
        cqi_sum += cqi_of(r, w);
        if (is_new_tx(r)) {
          harq_drb[w] = new_tx_drb(r);
          new_bytes[harq_drb[w]] += tbs_new;
        } else {
          retx_bytes[harq_drb[w]] += tbs_retx; // the DRB of the process's first transmission
        }
        drops++;
        drop_bytes += 100 + w;
        last_round[w] = r;
      }
    }
    // every TTI scheduled to its end, whichever UE it granted, left the PRBs of the others' RBGs unused
    uint64_t scheduled = 0;
    for (uint64_t r = 0; r < rounds; r += scheduled_every) {
      for (uint32_t w = 0; w < nof_workers; ++w) {
        unused_prbs += nof_prb - prbs_of(w);
        scheduled++;
      }
    }
    ue_snapshot_t s = snapshot_of(table, stable_rnti[k]);
    CHECK(s.bearers[idle_lcid].idle_ttis == scheduled);
    CHECK(s.bearers[idle_lcid].idle_prbs == unused_prbs);
    // retransmission bytes (the worker's number) wait on DRBs 4 and 5 from their first write on: never idle after
    // it, and before it only while that worker has not reached the UE
    for (uint32_t w = 1; w < nof_workers; ++w) {
      CHECK(s.bearers[drb_of(w)].idle_ttis <= nof_workers * (nof_stable + barrier_rounds));
    }
    CHECK(s.grant_ttis == grants);
    CHECK(s.grant_prbs == prbs);
    CHECK(s.mcs_sum == mcs);
    CHECK(s.cqi_reports == cqis);
    CHECK(s.cqi_sum == cqi_sum);
    CHECK(s.outage_events == (k == 0 ? rlf_events : 0));
    for (uint32_t lcid = 0; lcid < nof_lcids; ++lcid) {
      const bearer_snapshot_t& b = s.bearers[lcid];
      CHECK(b.sched_new_bytes == new_bytes[lcid]);
      CHECK(b.sched_retx_bytes == retx_bytes[lcid]);
      CHECK(b.dropped_sdus == (lcid == drop_lcid ? drops : 0));
      CHECK(b.dropped_bytes == (lcid == drop_lcid ? drop_bytes : 0));
    }
    for (uint32_t w = 0; w < nof_workers; ++w) {
      const bearer_snapshot_t& b = s.bearers[drb_of(w)];
      CHECK(b.queue_new_bytes == last_round[w] and b.queue_retx_bytes == w and b.queue_sdus == last_round[w]);
    }
    CHECK(new_bytes[3] > 0 and new_bytes[4] > 0 and retx_bytes[3] > 0 and retx_bytes[4] > 0);
    if (k == 0) {
      std::printf("UE 0x%04x: %llu grants of %llu PRBs, %llu new + %llu retx bytes on DRB 3, %llu drops, %llu RLF "
                  "events\n",
                  stable_rnti[k],
                  (unsigned long long)s.grant_ttis,
                  (unsigned long long)s.grant_prbs,
                  (unsigned long long)s.bearers[3].sched_new_bytes,
                  (unsigned long long)s.bearers[3].sched_retx_bytes,
                  (unsigned long long)s.bearers[3].dropped_sdus,
                  (unsigned long long)s.outage_events);
    }
  }
  CHECK(table.last_tti() == rounds * nof_workers - 1);
  CHECK(table.occupied(0) != 0 or table.occupied(1) != 0);
}

} // namespace

int main(int argc, char** argv)
{
  uint64_t rounds = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  if (rounds < nof_stable * 2) {
    std::fprintf(stderr, "usage: %s [ROUNDS >= %u]\n", argv[0], nof_stable * 2);
    return 2;
  }
  std::unique_ptr<ue_table> owner(new ue_table()); // some 100 kB of atomics
  ue_table&                 table = *owner;
  for (uint16_t rnti : stable_rnti) {
    table.add_ue(rnti);
    for (uint32_t w = 0; w < nof_workers; ++w) {
      table.add_bearer(rnti, drb_of(w), 256, 0);
    }
    table.add_bearer(rnti, idle_lcid, 256, 0);
  }

  std::atomic<bool> workers_done{false};
  uint64_t          churned = 0, rlf_events = 0, reads = 0;
  barrier           sync(nof_workers);
  std::thread       stack([&]() { stack_thread(table, workers_done, churned, rlf_events); });
  std::thread       exporter([&]() { reads = reader(table, workers_done); });
  std::vector<std::thread> workers;
  for (uint32_t w = 0; w < nof_workers; ++w) {
    workers.emplace_back([&table, &sync, w, rounds]() { worker(table, sync, w, rounds); });
  }
  for (std::thread& t : workers) {
    t.join();
  }
  workers_done.store(true);
  stack.join();
  exporter.join();

  check_totals(table, rounds, rlf_events);
  CHECK(reads > 0);
  CHECK(churned > max_live_churn);
  std::printf("ue_table_stress: %llu rounds x %u workers, %llu UEs churned, %llu snapshots read: %s\n",
              (unsigned long long)rounds,
              nof_workers,
              (unsigned long long)churned,
              (unsigned long long)reads,
              failures.load() == 0 ? "ok" : "FAILED");
  return failures.load() == 0 ? 0 : 1;
}
