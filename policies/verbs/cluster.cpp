#include "policies/verbs/cluster.h"

#include <infiniband/verbs.h>
#include <sys/mman.h>

#include <algorithm>
#include <boost/fiber/all.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#ifdef DMRT_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#include "policies/verbs/mlx5_masked.h"
#include "policies/verbs/transport.h"
#include "policies/verbs/wire.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"
#include "runtime/messaging.h"

namespace dmrt::verbs {

namespace {

std::string err_text(int e) {
  return std::strerror(e);
}

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_ATOMIC;

uint32_t random_psn() {
  static thread_local std::mt19937 rng(std::random_device{}());
  return rng() & 0xffffff;
}

uint64_t round8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

const char* opcode_name(VerbKind k) {
  switch (k) {
    case VerbKind::kRead:
      return "RDMA READ";
    case VerbKind::kWrite:
      return "RDMA WRITE";
    case VerbKind::kCas:
      return "ATOMIC CMP_AND_SWP";
    case VerbKind::kMaskedCas:
      return "ATOMIC MASKED_CMP_AND_SWP (mlx5 native)";
    case VerbKind::kFaa:
      return "ATOMIC FETCH_AND_ADD";
  }
  return "?";
}

constexpr uint64_t kRingTail = MailboxRing::kTailOffset;
constexpr uint64_t kRingSlots = MailboxRing::kSlotsOffset;
constexpr uint64_t kSlotHeader = MailboxRing::kSlotHeader;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Per client thread: its CQ, its QPs (one per target node), its registered staging slab and the
// poller fiber that drains the CQ and wakes the fibers owning the completions.

struct Conn {
  ibv_qp* qp = nullptr;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint64_t rbytes = 0;
  uint32_t outstanding = 0;  // posted work requests not yet retired
  bool broken = false;       // an error completion moved the QP to ERROR; reconnect before use
};

struct Pending;
struct WrTag {
  Pending* pending;
  uint64_t remote;
  uint32_t length;
  uint16_t batch_size;
  NodeId node;
  VerbKind kind;
  bool last;
};
struct Pending {
  unsigned remaining = 0;
  std::string error;
  bool error_is_flush = false;
};

struct ThreadState {
  Cluster* cluster = nullptr;
  unsigned index = 0;
  ibv_cq* cq = nullptr;
  std::vector<Conn> conns;
  std::byte* staging = nullptr;
  ibv_mr* staging_mr = nullptr;
  std::vector<uint32_t> free_slots;
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  bool stop = false;
  bool bound = false;
  boost::fibers::fiber poller;
  std::string fatal;

  ~ThreadState() {
    for (Conn& c : conns)
      if (c.qp) ibv_destroy_qp(c.qp);
    if (cq) ibv_destroy_cq(cq);
    if (staging_mr) ibv_dereg_mr(staging_mr);
    if (staging) std::free(staging);
  }

  void drain() {
    ibv_wc wc[32];
    int n = ibv_poll_cq(cq, 32, wc);
    if (n < 0) {
      fatal = "ibv_poll_cq failed on thread " + std::to_string(index);
      cv.notify_all();
      return;
    }
    bool wake = false;
    for (int i = 0; i < n; ++i) {
      auto* tag = reinterpret_cast<WrTag*>(wc[i].wr_id);
      Pending* p = tag->pending;
      Conn& c = conns[tag->node];
      if (wc[i].status != IBV_WC_SUCCESS) {
        c.broken = true;
        bool flush = wc[i].status == IBV_WC_WR_FLUSH_ERR;
        if (p->error.empty() || (p->error_is_flush && !flush)) {
          std::ostringstream os;
          os << opcode_name(tag->kind) << " of " << tag->length << " bytes to "
             << GlobalAddress::from_raw(tag->remote).to_string() << " (thread " << index
             << ") completed with status \"" << ibv_wc_status_str(wc[i].status) << "\" ("
             << int(wc[i].status) << ", vendor error 0x" << std::hex << wc[i].vendor_err << ")";
          if (wc[i].status == IBV_WC_REM_ACCESS_ERR)
            os << ": the remote node refused the access (wrong rkey or outside its region)";
          else if (wc[i].status == IBV_WC_RETRY_EXC_ERR)
            os << ": the remote node did not answer (down, or path/GID/MTU mismatch)";
          p->error = os.str();
          p->error_is_flush = flush;
        }
      }
      if (tag->last) {
        c.outstanding -= tag->batch_size;
        if (--p->remaining == 0) wake = true;
      }
    }
    if (wake || n > 0) cv.notify_all();
  }
};

namespace {
thread_local ThreadState* tls_state = nullptr;

ThreadState& current(Cluster* c) {
  ThreadState* ts = tls_state;
  if (!ts || ts->cluster != c)
    throw TransportError(
        "verbs endpoint used on an OS thread that is not bound to its cluster: run clients "
        "under Scheduler::run(body, cluster.thread_hooks()) or hold a Cluster::ThreadBinding");
  return *ts;
}
}  // namespace

// ---------------------------------------------------------------------------------------------

Cluster::Cluster(ClusterConfig config, NodeId self, Options opts)
    : config_(std::move(config)), self_(self), opts_(opts) {
  config_.validate();
  if (self_ >= config_.size())
    throw ConfigError("node id " + std::to_string(self_) + " is not in the cluster (it has " +
                      std::to_string(config_.size()) + " nodes)");
  if (opts_.threads == 0) throw ConfigError("verbs: threads must be at least 1");
  if (opts_.staging_slot < 4096 || opts_.staging_bytes < opts_.staging_slot)
    throw ConfigError("verbs: staging slab must hold at least one slot of >= 4096 bytes");
  device_ = std::make_unique<Device>(opts_);
  if (static_cast<int>(opts_.qp_depth) > device_->max_qp_wr())
    opts_.qp_depth = static_cast<uint32_t>(device_->max_qp_wr());
  choose_masked_cas();  // before anything the destructor would have to release

  const NodeSpec& me = config_.nodes[self_];
  region_bytes_ = me.region_bytes;
  void* p = MAP_FAILED;
  if (opts_.hugepages) {
    uint64_t huge = (region_bytes_ + (2u << 20) - 1) & ~uint64_t((2u << 20) - 1);
    p = mmap(nullptr, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1,
             0);
    if (p != MAP_FAILED) {
      region_huge_ = true;
      region_bytes_ = me.region_bytes;
    }
  }
  if (p == MAP_FAILED)
    p = mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot map the " + std::to_string(region_bytes_) + "-byte region of node " +
                std::to_string(self_) + ": " + err_text(errno));
  region_ = static_cast<std::byte*>(p);
  layout::format_region(region_, region_bytes_, self_, me.role, config_);
  region_mr_ = ibv_reg_mr(device_->pd(), region_, region_bytes_, kAccess);
  if (!region_mr_)
    throw TransportError("cannot register the " + std::to_string(region_bytes_) +
                         "-byte region of node " + std::to_string(self_) + " with " +
                         device_->name() + ": " + err_text(errno) + " (check ulimit -l / memlock)");

  server_cq_ = ibv_create_cq(device_->context(), 64, nullptr, nullptr, 0);
  if (!server_cq_) throw TransportError("ibv_create_cq failed: " + err_text(errno));

  if (!me.address.empty()) {
    std::string host;
    uint16_t port;
    wire::split_address(me.address, host, port);
    listener_ = std::make_unique<wire::Listener>(me.address);
    listen_port_ = listener_->port();
    server_ = std::thread([this] { serve_loop(); });
  }
}

Cluster::~Cluster() {
  stop_.store(true);
  serve_cv_.notify_all();
  if (server_.joinable()) server_.join();
  for (auto& t : conn_threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  for (ibv_qp* q : server_qps_)
    if (q) ibv_destroy_qp(q);
  if (server_cq_) ibv_destroy_cq(server_cq_);
  if (region_mr_) ibv_dereg_mr(region_mr_);
  if (region_) {
    uint64_t len = region_huge_ ? ((region_bytes_ + (2u << 20) - 1) & ~uint64_t((2u << 20) - 1))
                                : region_bytes_;
    munmap(region_, len);
  }
}

std::string Cluster::report() const {
  std::ostringstream os;
  os << device_->report() << "; masked CAS " << masked_report_ << "; node " << self_ << " ("
     << role_name(config_.nodes[self_].role) << ") region " << region_bytes_ << " bytes"
     << (region_huge_ ? " on hugepages" : "")
     << (opts_.hugepages && !region_huge_ ? " (hugepages asked but unavailable; 4 KiB pages)" : "")
     << "; " << opts_.threads << " client thread(s), QP depth " << opts_.qp_depth << ", staging "
     << opts_.staging_bytes << " bytes/thread in " << opts_.staging_slot << "-byte slots";
  if (listener_) os << "; bootstrap on port " << listen_port_;
  return os.str();
}

// --- QPs ---------------------------------------------------------------------------------------

ibv_qp* Cluster::create_qp(ibv_cq* cq, uint32_t depth, bool raw_wqe) const {
  auto rc_attrs = [&](auto& a) {  // the same fields in ibv_qp_init_attr and its _ex form
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 0;
    a.cap.max_send_wr = depth;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
  };
  ibv_qp* qp = nullptr;
  if (!raw_wqe) {
    ibv_qp_init_attr a{};
    rc_attrs(a);
    qp = ibv_create_qp(device_->pd(), &a);
  } else {
#ifdef DMRT_HAVE_MLX5DV
    // Native masked CAS: the QP takes raw WQEs, posted through the ibv_wr_* API. The inline
    // budget only sizes the send-queue stride so an 80-byte masked-CAS WQE fits one entry.
    ibv_qp_init_attr_ex a{};
    rc_attrs(a);
    a.cap.max_inline_data = 64;
    a.pd = device_->pd();
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    a.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE |
                       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    mlx5dv_qp_init_attr m{};
    m.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
    m.send_ops_flags = MLX5DV_QP_EX_WITH_RAW_WQE;
    qp = mlx5dv_create_qp(device_->context(), &a, &m);
#else
    throw Error("internal: raw-WQE QP asked for in a build without mlx5dv");
#endif
  }
  if (!qp)
    throw TransportError(
        std::string(raw_wqe ? "mlx5dv_create_qp (RC, raw WQE, " : "ibv_create_qp (RC, ") +
        std::to_string(depth) + " send entries) on " + device_->name() +
        " failed: " + err_text(errno));
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.pkey_index = 0;
  m.port_num = device_->port();
  m.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  if (int rc = ibv_modify_qp(
          qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    ibv_destroy_qp(qp);
    throw TransportError("QP cannot reach INIT on " + device_->name() + " port " +
                         std::to_string(device_->port()) + ": " + err_text(rc));
  }
  return qp;
}

void Cluster::bring_up(ibv_qp* qp, uint32_t my_psn, const wire::QpInfo& peer,
                       const std::string& what) const {
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = std::min(device_->mtu(), static_cast<ibv_mtu>(peer.mtu));
  m.dest_qp_num = peer.qpn;
  m.rq_psn = peer.psn;
  m.max_dest_rd_atomic = static_cast<uint8_t>(device_->max_dest_rd_atomic());
  m.min_rnr_timer = 12;
  m.ah_attr.dlid = peer.lid;
  m.ah_attr.sl = 0;
  m.ah_attr.src_path_bits = 0;
  m.ah_attr.port_num = device_->port();
  if (device_->ethernet() || peer.lid == 0) {
    m.ah_attr.is_global = 1;
    std::memcpy(m.ah_attr.grh.dgid.raw, peer.gid, 16);
    m.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->gid_index());
    m.ah_attr.grh.hop_limit = opts_.hop_limit;
  }
  if (int rc =
          ibv_modify_qp(qp, &m,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    ibv_gid g;
    std::memcpy(g.raw, peer.gid, 16);
    throw TransportError("QP " + what + " cannot reach RTR: " + err_text(rc) + " (peer QPN " +
                         std::to_string(peer.qpn) + ", GID " + gid_text(g) + ", LID " +
                         std::to_string(peer.lid) + "; local GID index " +
                         std::to_string(device_->gid_index()) + ", MTU " +
                         std::to_string(mtu_bytes(m.path_mtu)) +
                         "): check --gid so both sides use the same GID type, and --mtu");
  }
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  r.timeout = opts_.ack_timeout;
  r.retry_cnt = opts_.retry_count;
  r.rnr_retry = opts_.rnr_retry;
  r.sq_psn = my_psn;
  r.max_rd_atomic = static_cast<uint8_t>(device_->max_rd_atomic());
  if (int rc = ibv_modify_qp(qp, &r,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    throw TransportError("QP " + what + " cannot reach RTS: " + err_text(rc) +
                         " (timeout exponent " + std::to_string(opts_.ack_timeout) + ")");
}

static wire::QpInfo local_info(const Device& d, ibv_qp* qp, uint32_t psn) {
  wire::QpInfo q;
  q.qpn = qp->qp_num;
  q.psn = psn;
  q.lid = d.lid();
  q.mtu = static_cast<uint8_t>(d.mtu());
  std::memcpy(q.gid, d.gid().raw, 16);
  return q;
}

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

void Cluster::open_connections(NodeId node, const std::vector<ThreadState*>& threads) {
  std::vector<ibv_qp*> qps;
  std::vector<uint32_t> psns;
  std::vector<uint32_t> replaced;
  wire::Writer w(wire::Type::kConnect);
  w.u16(self_)
      .u16(node)
      .u16(static_cast<uint16_t>(config_.size()))
      .u64(config_.nodes[node].region_bytes)
      .u32(config_.mailbox.mailboxes)
      .u32(config_.mailbox.slots)
      .u32(config_.mailbox.slot_bytes);
  try {
    for (ThreadState* ts : threads) {
      ibv_qp* qp = create_qp(ts->cq, opts_.qp_depth, native_masked_);
      qps.push_back(qp);
      psns.push_back(random_psn());
      if (ts->conns[node].qp) replaced.push_back(ts->conns[node].qp->qp_num);
    }
    w.u16(static_cast<uint16_t>(qps.size()));
    for (size_t i = 0; i < qps.size(); ++i) w.qp(local_info(*device_, qps[i], psns[i]));
    w.u16(static_cast<uint16_t>(replaced.size()));
    for (uint32_t q : replaced) w.u32(q);

    std::vector<uint8_t> frame = exchange(node, w, opts_.connect_timeout_ms);
    wire::Reader r(std::move(frame), "node " + std::to_string(node));
    if (r.type() == wire::Type::kError)
      throw TransportError("node " + std::to_string(node) + " refused the connection: " + r.str());
    if (r.type() != wire::Type::kConnectOk)
      throw TransportError("malformed bootstrap message from node " + std::to_string(node) +
                           ": unexpected type " + std::to_string(int(r.type())));
    NodeId who = r.u16();
    uint64_t rbytes = r.u64();
    uint64_t raddr = r.u64();
    uint32_t rkey = r.u32();
    uint16_t count = r.u16();
    if (who != node || count != qps.size())
      throw TransportError("node " + std::to_string(node) + " answered as node " +
                           std::to_string(who) + " with " + std::to_string(count) +
                           " QPs (cluster files differ?)");
    for (size_t i = 0; i < qps.size(); ++i) {
      wire::QpInfo peer = r.qp();
      bring_up(qps[i], psns[i], peer,
               "from node " + std::to_string(self_) + " thread " +
                   std::to_string(threads[i]->index) + " to node " + std::to_string(node));
    }
    r.expect_end();
    for (size_t i = 0; i < qps.size(); ++i) {
      Conn& c = threads[i]->conns[node];
      if (c.qp) ibv_destroy_qp(c.qp);
      c = Conn{qps[i], raddr, rkey, rbytes, 0, false};
    }
  } catch (...) {
    for (ibv_qp* q : qps) ibv_destroy_qp(q);
    throw;
  }
}

std::vector<uint8_t> Cluster::exchange(NodeId node, const wire::Writer& request,
                                       uint32_t timeout_ms) {
  if (node == self_) {  // this process serves that node: answer without the network
    wire::Reader r(request.data(), "this process");
    return handle(r);
  }
  const std::string& addr = config_.nodes[node].address;
  if (addr.empty())
    throw ConfigError("node " + std::to_string(node) + " (" + role_name(config_.nodes[node].role) +
                      ") has no address in the cluster config, so it cannot be reached over verbs");
  wire::Socket s = wire::Socket::connect(addr, timeout_ms, "node " + std::to_string(node));
  s.send(request);
  return s.receive_frame(timeout_ms);
}

// --- serving side -------------------------------------------------------------------------------

std::vector<uint8_t> Cluster::handle(wire::Reader& r) {
  auto error = [](const std::string& what) {
    wire::Writer w(wire::Type::kError);
    w.str(what);
    return w.data();
  };
  try {
    switch (r.type()) {
      case wire::Type::kConnect: {
        NodeId from = r.u16();
        NodeId target = r.u16();
        uint16_t nodes = r.u16();
        uint64_t expect_bytes = r.u64();
        MailboxGeometry g;
        g.mailboxes = r.u32();
        g.slots = r.u32();
        g.slot_bytes = r.u32();
        uint16_t count = r.u16();
        std::vector<wire::QpInfo> peers;
        for (uint16_t i = 0; i < count; ++i) peers.push_back(r.qp());
        uint16_t nrep = r.u16();
        std::vector<uint32_t> replaced;
        for (uint16_t i = 0; i < nrep; ++i) replaced.push_back(r.u32());
        r.expect_end();
        std::string who = "node " + std::to_string(from);
        if (target != self_)
          return error(who + " thinks it reached node " + std::to_string(target) +
                       ", but this is node " + std::to_string(self_) +
                       " (addresses in the cluster files differ)");
        if (nodes != config_.size() || expect_bytes != region_bytes_ ||
            g.mailboxes != config_.mailbox.mailboxes || g.slots != config_.mailbox.slots ||
            g.slot_bytes != config_.mailbox.slot_bytes)
          return error(who + "'s cluster config differs from node " + std::to_string(self_) +
                       "'s: it expects " + std::to_string(nodes) + " nodes and a region of " +
                       std::to_string(expect_bytes) + " bytes here; this node has " +
                       std::to_string(config_.size()) + " nodes, " + std::to_string(region_bytes_) +
                       " bytes (and the mailbox geometry must match): use one cluster file");
        wire::Writer w(wire::Type::kConnectOk);
        w.u16(self_)
            .u64(region_bytes_)
            .u64(reinterpret_cast<uint64_t>(region_))
            .u32(region_mr_->rkey)
            .u16(count);
        std::vector<ibv_qp*> made;
        try {
          for (const wire::QpInfo& peer : peers) {
            ibv_qp* qp = create_qp(server_cq_, 4);
            made.push_back(qp);
            uint32_t psn = random_psn();
            bring_up(qp, psn, peer, "from node " + std::to_string(self_) + " to " + who);
            w.qp(local_info(*device_, qp, psn));
          }
        } catch (...) {
          for (ibv_qp* q : made) ibv_destroy_qp(q);
          throw;
        }
        std::lock_guard<std::mutex> g2(serve_mu_);
        server_qps_.insert(server_qps_.end(), made.begin(), made.end());
        // The peer is replacing QPs that went to ERROR: drop our ends of them.
        for (ibv_qp*& q : server_qps_) {
          if (!q) continue;
          for (uint32_t dead : replaced)
            if (q->qp_num == dead && std::find(made.begin(), made.end(), q) == made.end()) {
              ibv_destroy_qp(q);
              q = nullptr;
              break;
            }
        }
        std::erase(server_qps_, nullptr);
        return w.data();
      }
      case wire::Type::kBarrier: {
        uint64_t id = r.u64();
        uint32_t parties = r.u32();
        r.expect_end();
        std::unique_lock<std::mutex> lk(serve_mu_);
        BarrierState* b = nullptr;
        for (auto& x : barriers_)
          if (x.id == id) b = &x;
        if (!b) {
          barriers_.push_back({id, 0});
          b = &barriers_.back();
        }
        ++b->arrived;
        serve_cv_.notify_all();
        auto arrived = [&] {
          for (auto& x : barriers_)
            if (x.id == id) return x.arrived >= parties;
          return false;
        };
        if (!serve_cv_.wait_for(lk, std::chrono::milliseconds(opts_.connect_timeout_ms),
                                [&] { return arrived() || stop_.load(); }) ||
            !arrived())
          return error("barrier " + std::to_string(id) + " timed out waiting for " +
                       std::to_string(parties) + " processes (a peer never arrived)");
        wire::Writer w(wire::Type::kBarrierOk);
        return w.data();
      }
      case wire::Type::kStop: {
        r.expect_end();
        request_stop();
        wire::Writer w(wire::Type::kStopOk);
        return w.data();
      }
      default:
        return error("unknown bootstrap request type " + std::to_string(int(r.type())));
    }
  } catch (const std::exception& e) {
    return error(e.what());
  }
}

void Cluster::serve_loop() {
  while (!stop_.load()) {
    wire::Socket s;
    if (!listener_->accept(s, 100)) continue;
    std::lock_guard<std::mutex> g(serve_mu_);
    conn_threads_.emplace_back(
        [this, sock = std::move(s)]() mutable { serve_connection(std::move(sock)); });
  }
}

void Cluster::serve_connection(wire::Socket s) {
  try {
    std::vector<uint8_t> frame = s.receive_frame(opts_.connect_timeout_ms);
    wire::Reader r(std::move(frame), s.peer());
    s.send_frame(handle(r));
  } catch (const std::exception& e) {
    try {
      wire::Writer w(wire::Type::kError);
      w.str(e.what());
      s.send(w);
    } catch (...) {
    }
  }
}

void Cluster::request_stop() {
  stop_.store(true);
  serve_cv_.notify_all();
}

void Cluster::serve_until_stopped() {
  std::unique_lock<std::mutex> lk(serve_mu_);
  while (!stop_.load()) serve_cv_.wait_for(lk, std::chrono::milliseconds(200));
}

void Cluster::stop_node(const std::string& address, uint32_t timeout_ms) {
  wire::Socket s = wire::Socket::connect(address, timeout_ms, "dmrt-node");
  wire::Writer w(wire::Type::kStop);
  s.send(w);
  wire::Reader r = s.receive(timeout_ms);
  if (r.type() != wire::Type::kStopOk)
    throw TransportError("dmrt-node at " + address + " did not acknowledge STOP");
}

// --- client side ----------------------------------------------------------------------------

ThreadState& Cluster::thread(unsigned t) {
  std::lock_guard<std::mutex> g(connect_mu_);
  if (t >= opts_.threads)
    throw ConfigError("client thread " + std::to_string(t) +
                      " but the verbs cluster was set up for " + std::to_string(opts_.threads) +
                      " threads (raise Options::threads)");
  if (threads_.empty()) {
    for (unsigned i = 0; i < opts_.threads; ++i) {
      auto ts = std::make_unique<ThreadState>();
      ts->cluster = this;
      ts->index = i;
      int cqe = static_cast<int>(std::min<uint64_t>(uint64_t(opts_.qp_depth) * config_.size() + 16,
                                                    uint64_t(device_->max_cqe())));
      ts->cq = ibv_create_cq(device_->context(), cqe, nullptr, nullptr, 0);
      if (!ts->cq)
        throw TransportError("ibv_create_cq(" + std::to_string(cqe) +
                             ") failed: " + err_text(errno));
      ts->conns.resize(config_.size());
      ts->staging = static_cast<std::byte*>(std::aligned_alloc(4096, opts_.staging_bytes));
      if (!ts->staging) throw Error("cannot allocate the verbs staging slab");
      ts->staging_mr =
          ibv_reg_mr(device_->pd(), ts->staging, opts_.staging_bytes, IBV_ACCESS_LOCAL_WRITE);
      if (!ts->staging_mr)
        throw TransportError("cannot register the staging slab: " + err_text(errno));
      for (uint32_t s = 0; s < opts_.staging_bytes / opts_.staging_slot; ++s)
        ts->free_slots.push_back(s);
      threads_.push_back(std::move(ts));
    }
  }
  return *threads_[t];
}

void Cluster::connect() {
  thread(0);
  std::vector<ThreadState*> all;
  for (auto& t : threads_) all.push_back(t.get());
  std::vector<NodeId> targets = config_.memory_nodes();
  if (std::find(targets.begin(), targets.end(), self_) == targets.end()) targets.push_back(self_);
  for (NodeId n : targets) open_connections(n, all);
}

void Cluster::barrier(unsigned parties) {
  if (parties == 0)
    parties = std::max<unsigned>(1, static_cast<unsigned>(config_.compute_nodes().size()));
  NodeId rendezvous = config_.memory_nodes().front();
  wire::Writer w(wire::Type::kBarrier);
  w.u64(++barrier_seq_).u32(parties);
  std::vector<uint8_t> frame = exchange(rendezvous, w, opts_.connect_timeout_ms + 5000);
  wire::Reader r(std::move(frame), "node " + std::to_string(rendezvous));
  if (r.type() == wire::Type::kError) throw TransportError(r.str());
  if (r.type() != wire::Type::kBarrierOk)
    throw TransportError("malformed barrier answer from node " + std::to_string(rendezvous));
}

Endpoint Cluster::endpoint(NodeId home, uint32_t client_id) {
  if (home != self_)
    throw ConfigError("a verbs endpoint is homed on its own process's node (" +
                      std::to_string(self_) + "), not node " + std::to_string(home));
  return Endpoint(this, home, client_id);
}

void Cluster::bind(unsigned t) {
  ThreadState& ts = thread(t);
  if (ts.bound)
    throw ConfigError("verbs client thread slot " + std::to_string(t) + " is already bound");
  ts.bound = true;
  ts.stop = false;
  tls_state = &ts;
  ts.poller = boost::fibers::fiber([p = &ts] {
    while (!p->stop) {
      p->drain();
      boost::this_fiber::yield();
    }
  });
}

void Cluster::unbind(unsigned t) {
  ThreadState& ts = thread(t);
  if (!ts.bound) return;
  ts.stop = true;
  if (ts.poller.joinable()) ts.poller.join();
  ts.bound = false;
  if (tls_state == &ts) tls_state = nullptr;
}

ThreadHooks Cluster::thread_hooks() {
  ThreadHooks h;
  h.on_start = [this](unsigned t) { bind(t); };
  h.on_stop = [this](unsigned t) { unbind(t); };
  return h;
}

Cluster::ThreadBinding::ThreadBinding(Cluster& c, unsigned t) : c_(c), t_(t) {
  c_.bind(t_);
}
Cluster::ThreadBinding::~ThreadBinding() {
  c_.unbind(t_);
}

void Cluster::add_colocated(Cluster& other) {
  std::lock_guard<std::mutex> g(connect_mu_);
  colocated_.push_back(&other);
}

Cluster* Cluster::colocated(NodeId node) {
  if (node == self_) return this;
  std::lock_guard<std::mutex> g(connect_mu_);
  for (Cluster* c : colocated_)
    if (c->self() == node) return c;
  return nullptr;
}

unsigned Cluster::reserve_slot() {
  std::lock_guard<std::mutex> g(connect_mu_);
  reserved_.resize(opts_.threads, false);
  for (unsigned t = 0; t < opts_.threads; ++t)
    if (!reserved_[t]) {
      reserved_[t] = true;
      return t;
    }
  throw ConfigError("node " + std::to_string(self_) + ": all " + std::to_string(opts_.threads) +
                    " client-thread slots are taken by services (raise Options::threads)");
}

void Cluster::release_slot(unsigned t) {
  std::lock_guard<std::mutex> g(connect_mu_);
  if (t < reserved_.size()) reserved_[t] = false;
}

void Cluster::corrupt_rkey_for_testing(unsigned t, NodeId node, uint32_t rkey) {
  ThreadState& ts = thread(t);
  if (!ts.conns.at(node).qp) open_connections(node, {&ts});
  ts.conns[node].rkey = rkey;
}

// --- Endpoint ---------------------------------------------------------------------------------

namespace {

// Posts every batch (one chained list each, last verb signaled), waits for all of them.
// A batch holding a native masked CAS: the same chain through the ibv_wr_* API, the masked CAS
// as a raw mlx5 WQE in its place, so the batch still rings one doorbell in order.
int post_with_raw_wqes(ibv_qp* qp, const ibv_send_wr* wrs, const Batch& b) {
  const size_t n = b.size();
#ifdef DMRT_HAVE_MLX5DV
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(qp);
  mlx5dv_qp_ex* mx = mlx5dv_qp_ex_from_ibv_qp_ex(qx);
  ibv_wr_start(qx);
  for (size_t i = 0; i < n; ++i) {
    const ibv_send_wr& w = wrs[i];
    const ibv_sge& g = *w.sg_list;
    qx->wr_id = w.wr_id;
    qx->wr_flags = w.send_flags;
    if (b[i].kind == VerbKind::kMaskedCas) {
      mlx5::MaskedCasArgs m;
      m.qpn = qp->qp_num;
      m.signaled = w.send_flags & IBV_SEND_SIGNALED;
      m.remote_addr = w.wr.atomic.remote_addr;
      m.rkey = w.wr.atomic.rkey;
      m.compare = b[i].compare;
      m.compare_mask = b[i].compare_mask;
      m.swap = b[i].swap;
      m.swap_mask = b[i].swap_mask;
      m.local_addr = g.addr;
      m.lkey = g.lkey;
      alignas(64) uint8_t wqe[mlx5::kMaskedCasWqeBytes];
      mlx5::encode_masked_cas(m, wqe);
      mlx5dv_wr_raw_wqe(mx, wqe);
      continue;
    }
    switch (w.opcode) {
      case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(qx, w.wr.rdma.rkey, w.wr.rdma.remote_addr);
        break;
      case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(qx, w.wr.rdma.rkey, w.wr.rdma.remote_addr);
        break;
      case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(qx, w.wr.atomic.rkey, w.wr.atomic.remote_addr,
                              w.wr.atomic.compare_add, w.wr.atomic.swap);
        break;
      case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(qx, w.wr.atomic.rkey, w.wr.atomic.remote_addr,
                                w.wr.atomic.compare_add);
        break;
      default:
        ibv_wr_abort(qx);
        return EINVAL;
    }
    if (w.num_sge)
      ibv_wr_set_sge(qx, g.lkey, g.addr, g.length);
    else
      ibv_wr_set_sge_list(qx, 0, nullptr);
  }
  return ibv_wr_complete(qx);
#else
  (void)qp, (void)wrs, (void)b;
  return EOPNOTSUPP;
#endif
}

void run_batches(Cluster& cl, ThreadState& ts, std::span<Batch> batches,
                 std::atomic<uint64_t>& ondemand, const std::function<void(NodeId)>& ensure) {
  const ClusterConfig& cfg = cl.config();
  const Device& dev = cl.device();
  size_t total = 0;
  uint64_t bytes = 0;
  for (Batch& b : batches) {
    if (b.empty()) continue;
    NodeId n = b.node();
    if (n >= cfg.size())
      throw AddressError("verb to node " + std::to_string(n) + ", but the cluster has " +
                         std::to_string(cfg.size()) + " nodes");
    for (const Verb& v : b.verbs()) {
      uint64_t len = v.is_atomic() ? 8 : v.length;
      if (v.remote.offset() + len > cfg.nodes[n].region_bytes || v.remote.offset() + len < len)
        throw AddressError("verb on " + v.remote.to_string() + " of " + std::to_string(len) +
                           " bytes runs past the node's region of " +
                           std::to_string(cfg.nodes[n].region_bytes) + " bytes");
      if (!v.is_atomic() && v.length > dev.max_msg_bytes())
        throw LimitError(std::string(verb_name(v.kind)) + " of " + std::to_string(v.length) +
                         " bytes exceeds the port's maximum message of " +
                         std::to_string(dev.max_msg_bytes()) + " bytes");
      if (v.is_atomic() && !dev.atomics())
        throw TransportError(dev.name() + " has no RDMA atomics (atomic_cap NONE)");
      bytes += round8(len);
      ++total;
    }
  }
  if (total == 0) return;

  // Local buffer: a slot of the thread's registered slab, or a one-off registration when the
  // verbs need more than a slot.
  const uint32_t slot_bytes = cl.options().staging_slot;
  std::byte* buf = nullptr;
  uint32_t lkey = 0;
  int64_t slot = -1;
  ibv_mr* temp_mr = nullptr;
  void* temp_mem = nullptr;
  if (bytes <= slot_bytes) {
    std::unique_lock<boost::fibers::mutex> lk(ts.mu);
    ts.cv.wait(lk, [&] { return !ts.free_slots.empty(); });
    slot = ts.free_slots.back();
    ts.free_slots.pop_back();
    buf = ts.staging + uint64_t(slot) * slot_bytes;
    lkey = ts.staging_mr->lkey;
  } else {
    uint64_t sz = (bytes + 4095) & ~uint64_t{4095};
    temp_mem = std::aligned_alloc(4096, sz);
    if (!temp_mem) throw Error("cannot allocate " + std::to_string(sz) + " staging bytes");
    temp_mr = ibv_reg_mr(dev.pd(), temp_mem, sz, IBV_ACCESS_LOCAL_WRITE);
    if (!temp_mr) {
      std::free(temp_mem);
      throw TransportError("cannot register " + std::to_string(sz) +
                           " staging bytes: " + err_text(errno));
    }
    ++ondemand;
    buf = static_cast<std::byte*>(temp_mem);
    lkey = temp_mr->lkey;
  }
  struct Release {
    ThreadState& ts;
    int64_t slot;
    ibv_mr* mr;
    void* mem;
    ~Release() {
      if (slot >= 0) {
        ts.free_slots.push_back(static_cast<uint32_t>(slot));
        ts.cv.notify_all();
      }
      if (mr) ibv_dereg_mr(mr);
      if (mem) std::free(mem);
    }
  } release{ts, slot, temp_mr, temp_mem};

  std::vector<WrTag> tags(total);
  std::vector<ibv_send_wr> wrs(total);
  std::vector<ibv_sge> sges(total);
  Pending p;
  std::string post_error;
  size_t k = 0;
  uint64_t off = 0;
  for (Batch& b : batches) {
    if (b.empty()) continue;
    NodeId n = b.node();
    try {
      ensure(n);
    } catch (const std::exception& e) {
      post_error = e.what();
      break;
    }
    Conn& c = ts.conns[n];
    uint32_t size = static_cast<uint32_t>(b.size());
    {
      std::unique_lock<boost::fibers::mutex> lk(ts.mu);
      ts.cv.wait(lk, [&] { return c.outstanding + size <= cl.options().qp_depth; });
    }
    size_t first = k;
    bool masked = false;
    for (size_t i = 0; i < b.size(); ++i, ++k) {
      const Verb& v = b[i];
      uint32_t len = v.is_atomic() ? 8 : v.length;
      bool last = i + 1 == b.size();
      tags[k] = WrTag{&p, v.remote.raw(), len, static_cast<uint16_t>(size), n, v.kind, last};
      sges[k].addr = reinterpret_cast<uint64_t>(buf + off);
      sges[k].length = len;
      sges[k].lkey = lkey;
      if (v.kind == VerbKind::kWrite && len) std::memcpy(buf + off, v.local, len);
      ibv_send_wr& w = wrs[k];
      w = {};
      w.wr_id = reinterpret_cast<uint64_t>(&tags[k]);
      w.sg_list = &sges[k];
      w.num_sge = len ? 1 : 0;
      w.send_flags = last ? IBV_SEND_SIGNALED : 0;
      w.next = last ? nullptr : &wrs[k + 1];
      uint64_t raddr = c.raddr + v.remote.offset();
      switch (v.kind) {
        case VerbKind::kRead:
        case VerbKind::kWrite:
          w.opcode = v.kind == VerbKind::kRead ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
          w.wr.rdma.remote_addr = raddr;
          w.wr.rdma.rkey = c.rkey;
          break;
        case VerbKind::kCas:
          w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.compare_add = v.compare;
          w.wr.atomic.swap = v.swap;
          w.wr.atomic.rkey = c.rkey;
          break;
        case VerbKind::kFaa:
          w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.compare_add = v.swap;
          w.wr.atomic.rkey = c.rkey;
          break;
        case VerbKind::kMaskedCas:
          // Only with native support (else Endpoint::execute runs the counted CAS loop).
          if (!cl.native_masked_cas())
            throw Error("internal: masked CAS reached the post path without native support");
          masked = true;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.rkey = c.rkey;
          break;
      }
      off += round8(len);
    }
    ibv_send_wr* bad = nullptr;
    int rc =
        masked ? post_with_raw_wqes(c.qp, &wrs[first], b) : ibv_post_send(c.qp, &wrs[first], &bad);
    if (rc) {
      post_error = "ibv_post_send of " + std::to_string(size) + " verbs to node " +
                   std::to_string(n) + " failed: " + err_text(rc);
      break;
    }
    c.outstanding += size;
    ++p.remaining;
  }
  {
    std::unique_lock<boost::fibers::mutex> lk(ts.mu);
    ts.cv.wait(lk, [&] { return p.remaining == 0 || !ts.fatal.empty(); });
  }
  if (!ts.fatal.empty()) throw TransportError(ts.fatal);
  if (!post_error.empty()) throw TransportError(post_error);
  if (!p.error.empty()) throw TransportError(p.error);
  off = 0;
  for (Batch& b : batches) {
    for (const Verb& v : b.verbs()) {
      uint32_t len = v.is_atomic() ? 8 : v.length;
      if (v.kind == VerbKind::kRead && len) std::memcpy(v.local, buf + off, len);
      if (v.is_atomic() && v.result) {
        std::memcpy(v.result, buf + off, 8);
        if (v.kind == VerbKind::kMaskedCas && cl.masked_reply_big_endian())
          *v.result = __builtin_bswap64(*v.result);
      }
      off += round8(len);
    }
  }
}

}  // namespace

void Endpoint::execute(std::span<Batch> batches, Counters& counters) {
  ThreadState& ts = current(cluster_);
  Cluster& cl = *cluster_;
  auto ensure = [&](NodeId n) {
    Conn& c = ts.conns[n];
    if (c.qp && c.broken) {
      // Let the flushed work requests drain, then reconnect this thread's QP to n.
      std::unique_lock<boost::fibers::mutex> lk(ts.mu);
      ts.cv.wait(lk, [&] { return c.outstanding == 0; });
    }
    if (!c.qp || c.broken) cl.open_connections(n, {&ts});
  };
  bool emulate = false;
  if (!cl.native_masked_cas())
    for (Batch& b : batches)
      for (const Verb& v : b.verbs())
        if (v.kind == VerbKind::kMaskedCas) emulate = true;
  if (!emulate) {
    run_batches(cl, ts, batches, cl.ondemand_regs_, ensure);
    return;
  }
  // Masked CAS without native support: each batch runs in segments; the verbs before a masked
  // CAS are posted together with a READ of its word (RC ordering keeps the batch's order), then
  // CAS attempts follow until the masked compare fails or the CAS wins.
  for (Batch& b : batches) {
    if (b.empty()) continue;
    Batch seg;
    for (const Verb& v : b.verbs()) {
      if (v.kind != VerbKind::kMaskedCas) {
        seg.add(v);
        continue;
      }
      uint64_t cur = 0;
      seg.read(v.remote, &cur, 8);
      run_batches(cl, ts, std::span<Batch>(&seg, 1), cl.ondemand_regs_, ensure);
      seg.clear();
      uint64_t attempts = 0;
      uint64_t old;
      for (;;) {
        if (!masked_cas_matches(cur, v.compare, v.compare_mask)) {
          old = cur;
          break;
        }
        uint64_t desired = masked_cas_result(cur, v.swap, v.swap_mask);
        if (desired == cur) {  // matches and changes nothing: done at the read
          old = cur;
          break;
        }
        ++attempts;
        uint64_t got = 0;
        Batch c;
        c.cas(v.remote, cur, desired, &got);
        run_batches(cl, ts, std::span<Batch>(&c, 1), cl.ondemand_regs_, ensure);
        if (got == cur) {
          old = cur;
          break;
        }
        cur = got;
      }
      NodeId n = v.remote.node();
      for (VerbCounters* vc : {&counters.total, &counters.by_node.at(n), &counters.role(role(n))}) {
        ++vc->emulated_masked_cas;
        if (attempts > 1) vc->emulation_retries += attempts - 1;
      }
      if (v.result) *v.result = old;
    }
    if (!seg.empty()) run_batches(cl, ts, std::span<Batch>(&seg, 1), cl.ondemand_regs_, ensure);
  }
}

void Endpoint::pause() {
  boost::this_fiber::yield();
  if ((++pauses_ & 63) == 0) std::this_thread::yield();
}

uint64_t Endpoint::now_ns() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool Endpoint::try_send(NodeId node, uint32_t mailbox, const MessageHeader& h,
                        std::span<const std::byte> payload) {
  const MailboxGeometry& g = mailbox_geometry();
  if (node >= node_count())
    throw AddressError("message to node " + std::to_string(node) + ", but the cluster has " +
                       std::to_string(node_count()) + " nodes");
  if (mailbox >= g.mailboxes)
    throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                       std::to_string(g.mailboxes) + ")");
  if (payload.size() > MailboxRing::max_payload(g))
    throw LimitError("message of " + std::to_string(payload.size()) +
                     " bytes exceeds the mailbox slot payload of " +
                     std::to_string(MailboxRing::max_payload(g)) +
                     " bytes (raise mailbox.slot_bytes)");
  Counters scratch;
  scratch.by_node.resize(node_count());
  uint64_t base = layout::mailbox_offset(g, mailbox);
  GlobalAddress tail{node, base + kRingTail};
  uint64_t pos = 0;
  {
    Batch b;
    b.read(tail, &pos, 8);
    execute(std::span<Batch>(&b, 1), scratch);
  }
  for (int tries = 0; tries < 64; ++tries) {
    uint64_t slot = base + kRingSlots + (pos & (g.slots - 1)) * g.slot_bytes;
    uint64_t seq = 0;
    {
      Batch b;
      b.read({node, slot}, &seq, 8);
      execute(std::span<Batch>(&b, 1), scratch);
    }
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (dif < 0) return false;  // full
    if (dif > 0) {              // another producer took it: look at the tail again
      Batch b;
      b.read(tail, &pos, 8);
      execute(std::span<Batch>(&b, 1), scratch);
      continue;
    }
    uint64_t old = 0;
    {
      Batch b;
      b.cas(tail, pos, pos + 1, &old);
      execute(std::span<Batch>(&b, 1), scratch);
    }
    if (old != pos) {
      pos = old;
      continue;
    }
    std::vector<std::byte> body(kSlotHeader - 8 + payload.size());
    uint64_t w1 = uint64_t{h.from_node} | (uint64_t{h.reply_mailbox} << 32);
    uint64_t w2 = uint64_t{h.tag} | (uint64_t{payload.size()} << 32);
    std::memcpy(body.data(), &w1, 8);
    std::memcpy(body.data() + 8, &w2, 8);
    std::memcpy(body.data() + 16, &h.request_id, 8);
    if (!payload.empty()) std::memcpy(body.data() + 24, payload.data(), payload.size());
    uint64_t publish = pos + 1;
    Batch b;
    b.write({node, slot + 8}, body.data(), static_cast<uint32_t>(body.size()));
    b.write({node, slot}, &publish, 8);  // after the body: RC executes WRITEs in order
    execute(std::span<Batch>(&b, 1), scratch);
    return true;
  }
  return false;
}

bool Endpoint::try_receive(uint32_t mailbox, Message& out) {
  const MailboxGeometry& g = mailbox_geometry();
  if (mailbox >= g.mailboxes)
    throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                       std::to_string(g.mailboxes) + ")");
  if (home_ != cluster_->self())
    throw TransportError("try_receive reads this process's own node's mailboxes only");
  MailboxRing ring(cluster_->local_region() + layout::mailbox_offset(g, mailbox), g);
  return ring.try_pop(out);
}

}  // namespace dmrt::verbs
