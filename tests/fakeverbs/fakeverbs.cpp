// A fake RDMA device for tests on hosts without a NIC: an LD_PRELOAD shim that answers the
// libibverbs calls dmrt/policies/verbs makes (device list, open, PD, MR, CQ, QP state changes,
// queries). Work requests posted on a QP complete at once; READ/WRITE/atomics move bytes only when
// the rkey names a region registered in this same process (else they complete with a remote
// access error), which is enough for the bootstrap, QP bring-up and in-process data paths.
// Device memory (ibv_alloc_dm, ibv_reg_dm_mr, ibv_memcpy_to/from_dm, max_dm_size through
// ibv_query_device_ex) is offered when DMRT_FAKEVERBS_DM_BYTES names a size or a test calls
// dmrt_fakeverbs_set_device_memory(bytes); by default there is none, as on Soft-RoCE.
#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

struct FakeCq {
  ibv_cq cq{};
  std::mutex mu;
  std::deque<ibv_wc> done;
};

struct FakeMr {
  ibv_mr mr{};
  unsigned char* host = nullptr;  // the bytes behind mr.addr (zero-based device memory: 0)
};

struct FakeDm {
  ibv_dm dm{};
  std::vector<unsigned char> bytes;
};

std::mutex g_mu;                              // guards g_mrs and the counters below
std::unordered_map<uint32_t, FakeMr*> g_mrs;  // by rkey
uint32_t g_next_key = 0x100;
std::atomic<uint32_t> g_next_qpn{0x40};
std::atomic<int> g_live_qps{0};
std::atomic<int> g_live_cqs{0};
std::atomic<int> g_live_mrs{0};
std::atomic<int> g_live_dms{0};
std::atomic<uint64_t> g_dm_bytes{0};  // max_dm_size offered; 0 = none
std::atomic<bool> g_dm_set{false};

uint64_t dm_offered() {
  if (!g_dm_set.load()) {
    const char* e = std::getenv("DMRT_FAKEVERBS_DM_BYTES");
    if (e) g_dm_bytes.store(std::strtoull(e, nullptr, 10));
    g_dm_set.store(true);
  }
  return g_dm_bytes.load();
}

ibv_device g_device{};
ibv_device* g_list[2] = {&g_device, nullptr};

// Performs one work request against this process's registered memory; returns the status.
ibv_wc_status apply(const ibv_send_wr& w) {
  const bool atomic =
      w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
  uint64_t raddr = atomic ? w.wr.atomic.remote_addr : w.wr.rdma.remote_addr;
  uint32_t rkey = atomic ? w.wr.atomic.rkey : w.wr.rdma.rkey;
  uint64_t len = 0;
  for (int i = 0; i < w.num_sge; ++i) len += w.sg_list[i].length;
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_mrs.find(rkey);
  if (it == g_mrs.end()) return IBV_WC_REM_ACCESS_ERR;
  auto base = reinterpret_cast<uint64_t>(it->second->mr.addr);
  if (raddr < base || raddr + len > base + it->second->mr.length) return IBV_WC_REM_ACCESS_ERR;
  auto* remote = it->second->host + (raddr - base);
  auto* local = w.num_sge ? reinterpret_cast<unsigned char*>(w.sg_list[0].addr) : nullptr;
  switch (w.opcode) {
    case IBV_WR_RDMA_READ:
      if (local) std::memcpy(local, remote, len);
      break;
    case IBV_WR_RDMA_WRITE:
      if (local) std::memcpy(remote, local, len);
      break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: {
      if (raddr % 8 || !local) return IBV_WC_REM_INV_REQ_ERR;
      auto* word = reinterpret_cast<std::atomic<uint64_t>*>(remote);
      uint64_t old;
      if (w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        old = word->fetch_add(w.wr.atomic.compare_add);
      } else {
        old = w.wr.atomic.compare_add;
        word->compare_exchange_strong(old, w.wr.atomic.swap);
      }
      std::memcpy(local, &old, 8);
      break;
    }
    default:
      return IBV_WC_LOC_QP_OP_ERR;
  }
  return IBV_WC_SUCCESS;
}

int fake_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  if (qp->state != IBV_QPS_RTS) {
    if (bad) *bad = wr;
    return EINVAL;
  }
  auto* cq = reinterpret_cast<FakeCq*>(qp->send_cq);
  for (ibv_send_wr* w = wr; w; w = w->next) {
    ibv_wc wc{};
    wc.wr_id = w->wr_id;
    wc.status = apply(*w);
    wc.qp_num = qp->qp_num;
    if (wc.status != IBV_WC_SUCCESS) qp->state = IBV_QPS_ERR;
    if ((w->send_flags & IBV_SEND_SIGNALED) || wc.status != IBV_WC_SUCCESS) {
      std::lock_guard<std::mutex> g(cq->mu);
      cq->done.push_back(wc);
    }
  }
  return 0;
}

int fake_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**) {
  return 0;
}

int fake_poll_cq(ibv_cq* c, int n, ibv_wc* wc) {
  auto* cq = reinterpret_cast<FakeCq*>(c);
  std::lock_guard<std::mutex> g(cq->mu);
  int got = 0;
  while (got < n && !cq->done.empty()) {
    wc[got++] = cq->done.front();
    cq->done.pop_front();
  }
  return got;
}

int fake_memcpy_to_dm(ibv_dm* d, uint64_t off, const void* src, size_t len) {
  auto* dm = reinterpret_cast<FakeDm*>(d);
  if (off + len > dm->bytes.size()) return EINVAL;
  std::lock_guard<std::mutex> g(g_mu);
  std::memcpy(dm->bytes.data() + off, src, len);
  return 0;
}

int fake_memcpy_from_dm(void* dst, ibv_dm* d, uint64_t off, size_t len) {
  auto* dm = reinterpret_cast<FakeDm*>(d);
  if (off + len > dm->bytes.size()) return EINVAL;
  std::lock_guard<std::mutex> g(g_mu);
  std::memcpy(dst, dm->bytes.data() + off, len);
  return 0;
}

ibv_dm* fake_alloc_dm(ibv_context* c, ibv_alloc_dm_attr* a) {
  if (a->length == 0 || a->length > dm_offered()) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* dm = new FakeDm{};
  dm->dm.context = c;
  dm->dm.memcpy_to_dm = fake_memcpy_to_dm;
  dm->dm.memcpy_from_dm = fake_memcpy_from_dm;
  // Not zeroed, as a NIC's memory is not: whoever allocates it must initialise it.
  dm->bytes.assign(a->length, 0xa5);
  ++g_live_dms;
  return &dm->dm;
}

int fake_free_dm(ibv_dm* d) {
  --g_live_dms;
  delete reinterpret_cast<FakeDm*>(d);
  return 0;
}

ibv_mr* fake_reg_dm_mr(ibv_pd* pd, ibv_dm* d, uint64_t off, size_t length, unsigned int access) {
  auto* dm = reinterpret_cast<FakeDm*>(d);
  // Device memory can only be registered zero-based (ibv_alloc_dm(3)).
  if (!(access & IBV_ACCESS_ZERO_BASED) || off + length > dm->bytes.size()) {
    errno = EINVAL;
    return nullptr;
  }
  auto* m = new FakeMr{};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = nullptr;  // zero-based: remote addresses are offsets
  m->mr.length = length;
  m->host = dm->bytes.data() + off;
  std::lock_guard<std::mutex> g(g_mu);
  m->mr.lkey = m->mr.rkey = g_next_key++;
  g_mrs[m->mr.rkey] = m;
  ++g_live_mrs;
  return &m->mr;
}

int fake_query_device_ex(ibv_context* c, const ibv_query_device_ex_input*, ibv_device_attr_ex* a,
                         size_t) {
  *a = {};
  ibv_query_device(c, &a->orig_attr);
  a->max_dm_size = dm_offered();
  return 0;
}

}  // namespace

extern "C" {

// Test hooks (look them up with dlsym(RTLD_DEFAULT, ...)).
__attribute__((visibility("default"))) int dmrt_fakeverbs_live_qps() {
  return g_live_qps.load();
}
__attribute__((visibility("default"))) int dmrt_fakeverbs_live_mrs() {
  return g_live_mrs.load();
}
__attribute__((visibility("default"))) int dmrt_fakeverbs_live_dms() {
  return g_live_dms.load();
}
// Device memory the fake device offers from now on (max_dm_size); 0 = none.
__attribute__((visibility("default"))) void dmrt_fakeverbs_set_device_memory(uint64_t bytes) {
  g_dm_bytes.store(bytes);
  g_dm_set.store(true);
}

ibv_device** ibv_get_device_list(int* num) {
  if (!g_device.name[0]) {
    std::strcpy(g_device.name, "fake0");
    std::strcpy(g_device.dev_name, "uverbs-fake0");
    g_device.node_type = IBV_NODE_CA;
    g_device.transport_type = IBV_TRANSPORT_IB;
  }
  if (num) *num = 1;
  auto** l = static_cast<ibv_device**>(std::malloc(sizeof g_list));
  std::memcpy(l, g_list, sizeof g_list);
  return l;
}

void ibv_free_device_list(ibv_device** list) {
  std::free(list);
}

const char* ibv_get_device_name(ibv_device* d) {
  return d->name;
}

int mlx5dv_is_supported(ibv_device*) {
  return 0;
}

ibv_context* ibv_open_device(ibv_device* d) {
  // An extended context that offers only the device-memory calls and query_device_ex: every other
  // inline *_ex call finds its op missing and falls back to the plain function, as before.
  auto* vc = new verbs_context{};
  vc->sz = sizeof(verbs_context);
  vc->alloc_dm = fake_alloc_dm;
  vc->free_dm = fake_free_dm;
  vc->reg_dm_mr = fake_reg_dm_mr;
  vc->query_device_ex = fake_query_device_ex;
  ibv_context* c = &vc->context;
  c->device = d;
  c->ops.poll_cq = fake_poll_cq;
  c->ops.post_send = fake_post_send;
  c->ops.post_recv = fake_post_recv;
  c->cmd_fd = -1;
  c->async_fd = -1;
  c->num_comp_vectors = 1;
  c->abi_compat = __VERBS_ABI_IS_EXTENDED;
  return c;
}

int ibv_close_device(ibv_context* c) {
  delete verbs_get_ctx(c);
  return 0;
}

int ibv_query_device(ibv_context*, ibv_device_attr* a) {
  *a = {};
  std::strcpy(a->fw_ver, "fake");
  a->phys_port_cnt = 1;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_qp_wr = 4096;
  a->max_cqe = 65536;
  a->max_qp = 1 << 16;
  a->max_cq = 1 << 16;
  a->max_mr = 1 << 16;
  a->max_qp_rd_atom = 16;
  a->max_qp_init_rd_atom = 16;
  a->max_sge = 16;
  return 0;
}

// Parenthesised names: verbs.h defines ibv_query_port and ibv_reg_mr as function-like macros.
// The caller's inline wrapper zeroes the whole attribute struct; only the fields of the
// compatible (older, shorter) layout are written here.
int(ibv_query_port)(ibv_context*, uint8_t port, struct _compat_ibv_port_attr* compat) {
  if (port != 1) return EINVAL;
  auto* a = reinterpret_cast<ibv_port_attr*>(compat);
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_1024;
  a->gid_tbl_len = 1;
  a->max_msg_sz = 1u << 30;
  a->lid = 0;
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

int ibv_query_gid(ibv_context*, uint8_t, int index, ibv_gid* gid) {
  if (index != 0) return EINVAL;
  *gid = {};
  gid->raw[10] = gid->raw[11] = 0xff;
  gid->raw[12] = 127;
  gid->raw[15] = 1;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* e, uint32_t,
                      size_t) {
  if (index != 0) return EINVAL;
  *e = {};
  ibv_query_gid(c, static_cast<uint8_t>(port), 0, &e->gid);
  e->gid_index = 0;
  e->port_num = port;
  e->gid_type = IBV_GID_TYPE_ROCE_V2;
  return 0;
}

ibv_pd* ibv_alloc_pd(ibv_context* c) {
  auto* pd = new ibv_pd{};
  pd->context = c;
  return pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  delete pd;
  return 0;
}

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  auto* m = new FakeMr{};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->host = static_cast<unsigned char*>(addr);
  std::lock_guard<std::mutex> g(g_mu);
  m->mr.lkey = m->mr.rkey = g_next_key++;
  (void)access;
  g_mrs[m->mr.rkey] = m;
  ++g_live_mrs;
  return &m->mr;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t, unsigned int access) {
  return (ibv_reg_mr)(pd, addr, length, static_cast<int>(access));
}

int ibv_dereg_mr(ibv_mr* mr) {
  auto* m = reinterpret_cast<FakeMr*>(mr);
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_mrs.erase(mr->rkey);
  }
  --g_live_mrs;
  delete m;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* ch, int) {
  auto* cq = new FakeCq{};
  cq->cq.context = c;
  cq->cq.cqe = cqe;
  cq->cq.cq_context = cq_context;
  cq->cq.channel = ch;
  ++g_live_cqs;
  return &cq->cq;
}

int ibv_destroy_cq(ibv_cq* cq) {
  --g_live_cqs;
  delete reinterpret_cast<FakeCq*>(cq);
  return 0;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* a) {
  if (a->qp_type != IBV_QPT_RC) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* qp = new ibv_qp{};
  qp->context = pd->context;
  qp->pd = pd;
  qp->send_cq = a->send_cq;
  qp->recv_cq = a->recv_cq;
  qp->qp_type = a->qp_type;
  qp->qp_num = g_next_qpn.fetch_add(1) & 0xffffff;
  qp->state = IBV_QPS_RESET;
  ++g_live_qps;
  return qp;
}

int ibv_destroy_qp(ibv_qp* qp) {
  --g_live_qps;
  delete qp;
  return 0;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (!(mask & IBV_QP_STATE)) return 0;
  // The RC state machine's legal steps (the ones dmrt/policies/verbs takes, plus ERR and RESET).
  ibv_qp_state from = qp->state, to = attr->qp_state;
  bool ok =
      to == IBV_QPS_ERR || to == IBV_QPS_RESET || (from == IBV_QPS_RESET && to == IBV_QPS_INIT) ||
      (from == IBV_QPS_INIT && (to == IBV_QPS_INIT || to == IBV_QPS_RTR)) ||
      (from == IBV_QPS_RTR && to == IBV_QPS_RTS) || (from == IBV_QPS_RTS && to == IBV_QPS_RTS);
  if (!ok) return EINVAL;
  qp->state = to;
  return 0;
}

}  // extern "C"
