// verbs::Cluster's choice of how masked CAS is served, and the loopback probe that decides
// whether an mlx5 device's native masked CAS has the semantics dmrt needs (see mlx5_masked.h).
#include <chrono>
#include <thread>

#include "dmrt/policies/verbs/cluster_internal.h"
#include "dmrt/policies/verbs/mlx5_masked.h"
#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

namespace dmrt::verbs {

// --- masked CAS --------------------------------------------------------------------------------

void Cluster::choose_masked_cas() {
  native_masked_ = false;
  if (!device_->atomics()) {
    masked_report_ = "unavailable (device has no RDMA atomics)";
  } else if (opts_.masked_cas == MaskedCasMode::kEmulate) {
    masked_report_ = "emulated by a counted READ + CAS loop (--masked-cas emulate)";
  } else if (!device_->mlx5()) {
    masked_report_ =
        "emulated by a counted READ + CAS loop (not an mlx5 device: no extended atomics)";
  } else {
#ifdef DMRT_HAVE_MLX5DV
    mlx5::ProbeVerdict v = mlx5::judge(probe_masked_cas());
    native_masked_ = v.native;
    masked_reply_be_ = v.reply_big_endian;
    masked_report_ = v.native ? "native mlx5 extended atomic (" + v.why + ")"
                              : "emulated by a counted READ + CAS loop (mlx5 " + v.why + ")";
#else
    masked_report_ =
        "emulated by a counted READ + CAS loop (mlx5 device, but this build has no mlx5dv)";
#endif
  }
  if (opts_.masked_cas == MaskedCasMode::kNative && !native_masked_)
    throw ConfigError("--masked-cas native asked, but " + device_->name() + ": masked CAS is " +
                      masked_report_);
}

#ifdef DMRT_HAVE_MLX5DV
namespace {

// Posts one raw WQE (signaled) on a raw-WQE QP.
int post_raw(ibv_qp* qp, uint64_t wr_id, const void* wqe) {
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(qp);
  mlx5dv_qp_ex* mx = mlx5dv_qp_ex_from_ibv_qp_ex(qx);
  ibv_wr_start(qx);
  qx->wr_id = wr_id;
  mlx5dv_wr_raw_wqe(mx, wqe);
  return ibv_wr_complete(qx);
}

}  // namespace

// Two masked CASes over a loopback QP pair on a private registered word: the same WQE encoder
// and posting path the clients use, but on QPs that are thrown away if the device rejects it.
mlx5::ProbeObservation Cluster::probe_masked_cas() const {
  mlx5::ProbeObservation o;
  struct Res {
    ibv_cq* cq = nullptr;
    ibv_qp* a = nullptr;
    ibv_qp* b = nullptr;
    ibv_mr* mr = nullptr;
    alignas(64) uint64_t words[8] = {};
    ~Res() {
      if (a) ibv_destroy_qp(a);
      if (b) ibv_destroy_qp(b);
      if (mr) ibv_dereg_mr(mr);
      if (cq) ibv_destroy_cq(cq);
    }
  };
  auto res = std::make_unique<Res>();
  try {
    res->cq = ibv_create_cq(device_->context(), 8, nullptr, nullptr, 0);
    if (!res->cq) throw TransportError("ibv_create_cq: " + err_text(errno));
    res->mr = ibv_reg_mr(device_->pd(), res->words, sizeof(res->words), kAccess);
    if (!res->mr) throw TransportError("ibv_reg_mr: " + err_text(errno));
    res->a = create_qp(res->cq, 4, true);
    res->b = create_qp(res->cq, 4, true);
    uint32_t pa = random_psn(), pb = random_psn();
    bring_up(res->a, pa, local_info(*device_, res->b, pb), "masked-CAS probe");
    bring_up(res->b, pb, local_info(*device_, res->a, pa), "masked-CAS probe");

    volatile uint64_t* w = res->words;
    w[0] = o.initial = mlx5::kProbeWord;
    auto run = [&](uint64_t compare, uint64_t* ret) {
      mlx5::MaskedCasArgs m;
      m.qpn = res->a->qp_num;
      m.signaled = true;
      m.remote_addr = reinterpret_cast<uint64_t>(&res->words[0]);
      m.rkey = res->mr->rkey;
      m.compare = compare;
      m.compare_mask = mlx5::kProbeMask;
      m.swap = mlx5::kProbeSwap;
      m.swap_mask = mlx5::kProbeMask;
      m.local_addr = reinterpret_cast<uint64_t>(ret);
      m.lkey = res->mr->lkey;
      alignas(64) uint8_t wqe[mlx5::kMaskedCasWqeBytes];
      mlx5::encode_masked_cas(m, wqe);
      if (int rc = post_raw(res->a, 1, wqe)) throw TransportError("post: " + err_text(rc));
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      ibv_wc wc{};
      int n;
      while ((n = ibv_poll_cq(res->cq, 1, &wc)) == 0) {
        if (std::chrono::steady_clock::now() > deadline)
          throw TransportError("no completion within 2 s");
        std::this_thread::yield();
      }
      if (n < 0) throw TransportError("ibv_poll_cq failed");
      if (wc.status != IBV_WC_SUCCESS)
        throw TransportError(std::string("completion \"") + ibv_wc_status_str(wc.status) +
                             "\" (vendor error " + std::to_string(wc.vendor_err) + ")");
    };
    // Plain CAS would fail this compare (other bytes differ) and write 0xab00 if it matched.
    run(mlx5::kProbeWord & mlx5::kProbeMask, &res->words[1]);
    o.after_first = w[0];
    o.returned_first = w[1];
    run(0x1200, &res->words[2]);  // byte 1 is now 0xab: the masked compare fails
    o.after_second = w[0];
    o.returned_second = w[2];
    o.completed = true;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}
#endif

}  // namespace dmrt::verbs
