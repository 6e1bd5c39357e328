// verbs::Cluster's queue pairs: creation, INIT/RTR/RTS bring-up, the client's CONNECT exchange
// and the server's answer to it.
#include <algorithm>

#include "dmrt/policies/verbs/cluster_internal.h"
#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

namespace dmrt::verbs {

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

wire::QpInfo local_info(const Device& d, ibv_qp* qp, uint32_t psn) {
  wire::QpInfo q;
  q.qpn = qp->qp_num;
  q.psn = psn;
  q.lid = d.lid();
  q.mtu = static_cast<uint8_t>(d.mtu());
  std::memcpy(q.gid, d.gid().raw, 16);
  return q;
}

void Cluster::open_connections(NodeId node, const std::vector<ThreadState*>& threads) {
  std::vector<ibv_qp*> qps;
  std::vector<uint32_t> psns;
  wire::ConnectRequest req;
  req.from = self_;
  req.target = node;
  req.nodes = static_cast<uint16_t>(config_.size());
  req.region_bytes = config_.nodes[node].region_bytes;
  req.mailboxes = config_.mailbox.mailboxes;
  req.slots = config_.mailbox.slots;
  req.slot_bytes = config_.mailbox.slot_bytes;
  wire::Writer w(wire::Type::kConnect);
  try {
    for (ThreadState* ts : threads) {
      ibv_qp* qp = create_qp(ts->cq, opts_.qp_depth, native_masked_);
      qps.push_back(qp);
      psns.push_back(random_psn());
      if (ts->conns[node].qp) req.replaced.push_back(ts->conns[node].qp->qp_num);
    }
    for (size_t i = 0; i < qps.size(); ++i)
      req.qps.push_back(local_info(*device_, qps[i], psns[i]));
    wire::write(w, req);

    std::shared_ptr<wire::Socket> session;
    std::vector<uint8_t> frame = exchange(
        node, [&](uint64_t) { return w.data(); }, opts_.connect_timeout_ms, &session);
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
    uint64_t dm_bytes = r.u64();
    uint64_t dm_raddr = r.u64();
    uint32_t dm_rkey = r.u32();
    uint8_t dm_kind = r.u8();
    uint16_t count = r.u16();
    if (who != node || count != qps.size())
      throw TransportError("node " + std::to_string(node) + " answered as node " +
                           std::to_string(who) + " with " + std::to_string(count) +
                           " QPs (cluster files differ?)");
    if (dm_bytes != config_.nodes[node].device_memory_bytes)
      throw TransportError("node " + std::to_string(node) + " serves " + std::to_string(dm_bytes) +
                           " bytes of device memory; this node's cluster config says " +
                           std::to_string(config_.nodes[node].device_memory_bytes) +
                           " (cluster files differ?)");
    for (size_t i = 0; i < qps.size(); ++i) {
      wire::QpInfo peer = r.qp();
      bring_up(qps[i], psns[i], peer,
               "from node " + std::to_string(self_) + " thread " +
                   std::to_string(threads[i]->index) + " to node " + std::to_string(node));
    }
    r.expect_end();
    {
      std::lock_guard<std::mutex> g(serve_mu_);
      peer_dm_mode_[node] = dm_kind == 1 ? "on-chip" : dm_kind == 2 ? "host fallback" : "none";
    }
    for (size_t i = 0; i < qps.size(); ++i) {
      Conn& c = threads[i]->conns[node];
      if (c.qp) ibv_destroy_qp(c.qp);
      c = Conn{qps[i], raddr, rkey, rbytes, dm_raddr, dm_rkey, dm_bytes, 0, false, session};
    }
  } catch (...) {
    for (ibv_qp* q : qps) ibv_destroy_qp(q);
    throw;
  }
}

// --- serving side -------------------------------------------------------------------------------

ConnectAnswer Cluster::answer_connect(wire::Reader& r) {
  ConnectAnswer a;
  auto error = [&](const std::string& what) {
    wire::Writer w(wire::Type::kError);
    w.str(what);
    a.reply = w.data();
    return a;
  };
  wire::ConnectRequest req;
  try {
    req = wire::parse_connect(r, wire::kMaxQpsPerConnect);
  } catch (const std::exception& e) {
    return error(e.what());
  }
  NodeId from = req.from, target = req.target;
  uint16_t nodes = req.nodes;
  uint64_t expect_bytes = req.region_bytes;
  MailboxGeometry g;
  g.mailboxes = req.mailboxes;
  g.slots = req.slots;
  g.slot_bytes = req.slot_bytes;
  uint16_t count = static_cast<uint16_t>(req.qps.size());
  const std::vector<wire::QpInfo>& peers = req.qps;
  a.replaced = req.replaced;
  a.from = from;
  std::string who = "node " + std::to_string(from);
  if (from >= config_.size())
    return error(who + " is not in this node's cluster of " + std::to_string(config_.size()) +
                 " nodes");
  if (target != self_)
    return error(who + " thinks it reached node " + std::to_string(target) + ", but this is node " +
                 std::to_string(self_) + " (addresses in the cluster files differ)");
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
      .u64(dm_bytes_)
      .u64(dm_raddr_)
      .u32(dm_mr_ ? dm_mr_->rkey : 0)
      .u8(dm_        ? 1
          : dm_host_ ? 2
                     : 0)
      .u16(count);
  try {
    for (const wire::QpInfo& peer : peers) {
      ibv_qp* qp = create_qp(server_cq_, 4);
      a.qps.push_back(qp);
      uint32_t psn = random_psn();
      bring_up(qp, psn, peer, "from node " + std::to_string(self_) + " to " + who);
      w.qp(local_info(*device_, qp, psn));
    }
  } catch (const std::exception& e) {
    for (ibv_qp* q : a.qps) ibv_destroy_qp(q);
    a.qps.clear();
    return error(e.what());
  }
  a.reply = w.data();
  return a;
}

}  // namespace dmrt::verbs
