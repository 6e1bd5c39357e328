// The verbs data path: posting batches of one-sided verbs on the calling thread's QPs, retiring
// completions, and the counted READ + CAS loop that stands in for native masked CAS and stores
// lock words where a WRITE would race the device's atomics.
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "dmrt/policies/verbs/cluster_internal.h"
#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

namespace dmrt::verbs {

namespace {

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

}  // namespace

void ThreadState::drain() {
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

// `ensure(node)` (re)connects the thread's QP to a node before its batch is posted; a template
// parameter rather than a std::function so that a round trip allocates nothing. Batches Client
// marked local (dmrt/runtime/verbs.h) are skipped: the caller did them.
template <class Ensure>
void run_batches(Cluster& cl, ThreadState& ts, std::span<Batch> batches,
                 std::atomic<uint64_t>& ondemand, Ensure& ensure) {
  const ClusterConfig& cfg = cl.config();
  const Device& dev = cl.device();
  size_t total = 0;
  uint64_t bytes = 0;
  auto skip = [&](size_t i) { return batches[i].empty() || batches[i].local(); };
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    if (skip(bi)) continue;
    Batch& b = batches[bi];
    NodeId n = b.node();
    if (n >= cfg.size())
      throw AddressError("verb to node " + std::to_string(n) + ", but the cluster has " +
                         std::to_string(cfg.size()) + " nodes");
    for (const Verb& v : b.verbs()) {
      uint64_t len = v.is_atomic() ? 8 : v.length;
      const bool dm = v.remote.in_device_memory();
      const uint64_t limit = dm ? cfg.nodes[n].device_memory_bytes : cfg.nodes[n].region_bytes;
      const uint64_t off = v.remote.region_offset();
      if (off + len > limit || off + len < len)
        throw AddressError("verb on " + v.remote.to_string() + " of " + std::to_string(len) +
                           " bytes runs past the node's " + (dm ? "device memory" : "region") +
                           " of " + std::to_string(limit) + " bytes");
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

  // Work requests live in the slot's scratch (kept warm across round trips); a call too big for
  // a slot registers memory anyway, and gets its own.
  ThreadState::Scratch oversize;
  ThreadState::Scratch& sc = slot >= 0 ? ts.scratch[static_cast<size_t>(slot)] : oversize;
  if (sc.tags.size() < total) {
    sc.tags.resize(total);
    sc.wrs.resize(total);
    sc.sges.resize(total);
  }
  WrTag* tags = sc.tags.data();
  ibv_send_wr* wrs = sc.wrs.data();
  ibv_sge* sges = sc.sges.data();
  Pending p;
  std::string post_error;
  size_t k = 0;
  uint64_t off = 0;
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    if (skip(bi)) continue;
    Batch& b = batches[bi];
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
      // Host region or device memory: one QP, two memory regions of the target (so a batch
      // mixing them keeps its order).
      const bool dm = v.remote.in_device_memory();
      const uint64_t raddr = (dm ? c.dm_raddr : c.raddr) + v.remote.region_offset();
      const uint32_t rkey = dm ? c.dm_rkey : c.rkey;
      switch (v.kind) {
        case VerbKind::kRead:
        case VerbKind::kWrite:
          w.opcode = v.kind == VerbKind::kRead ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
          w.wr.rdma.remote_addr = raddr;
          w.wr.rdma.rkey = rkey;
          break;
        case VerbKind::kCas:
          w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.compare_add = v.compare;
          w.wr.atomic.swap = v.swap;
          w.wr.atomic.rkey = rkey;
          break;
        case VerbKind::kFaa:
          w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.compare_add = v.swap;
          w.wr.atomic.rkey = rkey;
          break;
        case VerbKind::kMaskedCas:
          // Only with native support (else Endpoint::execute runs the counted CAS loop).
          if (!cl.native_masked_cas())
            throw Error("internal: masked CAS reached the post path without native support");
          masked = true;
          w.wr.atomic.remote_addr = raddr;
          w.wr.atomic.rkey = rkey;
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
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    if (skip(bi)) continue;
    for (const Verb& v : batches[bi].verbs()) {
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

// A masked CAS without native support, or an atomic word store (compare mask 0): a READ of the
// word posted after the verbs in `seg` (one batch, in order), then CAS attempts until the masked
// compare fails or a CAS wins. Only atomics write the word, so the CAS that wins is atomic with
// every other atomic on it, even where a WRITE would not be (a software device). Returns the
// word's prior value; `attempts` counts the CASes posted. Leaves `seg` empty.
template <class Ensure>
uint64_t cas_loop(Cluster& cl, ThreadState& ts, std::atomic<uint64_t>& ondemand, Batch& seg,
                  const Verb& v, Ensure& ensure, uint64_t& attempts) {
  uint64_t cur = 0;
  seg.read(v.remote, &cur, 8);
  run_batches(cl, ts, std::span<Batch>(&seg, 1), ondemand, ensure);
  seg.clear();
  attempts = 0;
  for (;;) {
    if (!masked_cas_matches(cur, v.compare, v.compare_mask)) return cur;
    uint64_t desired = masked_cas_result(cur, v.swap, v.swap_mask);
    if (desired == cur) return cur;  // matches and changes nothing: done at the read
    ++attempts;
    uint64_t got = 0;
    Batch c;
    c.cas(v.remote, cur, desired, &got);
    run_batches(cl, ts, std::span<Batch>(&c, 1), ondemand, ensure);
    if (got == cur) return cur;
    cur = got;
  }
}

// Where a lock release's word is (Batch::release), and the range of the other bytes.
uint32_t lock_offset(const Verb& v) {
  return v.lock == LockWord::kFirst ? 0 : v.length - 8;
}
uint32_t rest_offset(const Verb& v) {
  return v.lock == LockWord::kFirst ? 8 : 0;
}

// A lock release's word as an atomic store: a masked CAS that always matches and replaces the
// whole word.
Verb release_store(const Verb& v) {
  Verb s;
  s.kind = VerbKind::kMaskedCas;
  s.length = 8;
  s.remote = v.remote + lock_offset(v);
  std::memcpy(&s.swap, static_cast<const std::byte*>(v.local) + lock_offset(v), 8);
  s.compare_mask = 0;
  s.swap_mask = ~uint64_t{0};
  return s;
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
  auto count = [&](NodeId n, auto&& add) {
    for (VerbCounters* vc : {&counters.total, &counters.by_node.at(n), &counters.role(role(n))})
      add(*vc);
  };
  // Local accesses: this node's own registered region, with the CPU's loads and stores. The
  // region is in this process (Endpoints are homed on the Cluster's own node). A lock release's
  // lock word is not a CPU store: the device's atomics are atomic only among themselves
  // (atomic_cap HCA), so a store between a remote CAS's read and its write would be lost. That
  // word goes through the device, with an atomic, after the release's other bytes.
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    if (!batches[bi].local()) continue;
    for (const Verb& v : batches[bi].verbs()) {
      if (v.remote.offset() + v.length > cl.local_region_bytes() ||
          v.remote.offset() + v.length < v.length)
        throw AddressError("verb on " + v.remote.to_string() + " of " + std::to_string(v.length) +
                           " bytes runs past the node's region of " +
                           std::to_string(cl.local_region_bytes()) + " bytes");
      std::byte* mem = cl.local_region() + v.remote.offset();
      if (v.length == 0) continue;
      if (v.kind == VerbKind::kRead) {
        std::memcpy(v.local, mem, v.length);
      } else if (v.lock == LockWord::kNone) {
        std::memcpy(mem, v.local, v.length);
      } else {
        std::memcpy(mem + rest_offset(v), static_cast<const std::byte*>(v.local) + rest_offset(v),
                    v.length - 8);
        Batch seg;
        uint64_t attempts = 0;
        cas_loop(cl, ts, cl.ondemand_regs_, seg, release_store(v), ensure, attempts);
        count(v.remote.node(), [&](VerbCounters& c) { ++c.atomic_releases; });
      }
    }
  }
  const bool soft = cl.writes_race_atomics();
  // A release whose lock word leads its buffer is split on a NIC too: one WRITE lands in address
  // order, which would store that word (the unlock) before the bytes it guards.
  auto segmented = [&](const Verb& v) {
    return (v.kind == VerbKind::kMaskedCas && !cl.native_masked_cas()) ||
           (v.lock != LockWord::kNone && soft) || v.lock == LockWord::kFirst;
  };
  bool any = false;
  for (Batch& b : batches)
    if (!b.local())
      for (const Verb& v : b.verbs()) any = any || segmented(v);
  if (!any) {
    run_batches(cl, ts, batches, cl.ondemand_regs_, ensure);
    return;
  }
  // Each batch runs in segments: the verbs before an emulated masked CAS are posted together
  // with a READ of its word (RC ordering keeps the batch's order), then CAS attempts follow until
  // the masked compare fails or the CAS wins. A lock release on a software device is its other
  // bytes as a WRITE, then its lock word stored the same way; on a NIC, a leading lock word is
  // a second WRITE after the first.
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    Batch& b = batches[bi];
    if (b.empty() || b.local()) continue;
    Batch seg;
    for (const Verb& v : b.verbs()) {
      if (!segmented(v)) {
        seg.add(v);
        continue;
      }
      NodeId n = v.remote.node();
      uint64_t attempts = 0;
      if (v.lock != LockWord::kNone) {
        // The other bytes, then the word: a second WRITE on a NIC (one QP places it after the
        // first, as Sherman's last-word release relies on within one WRITE), an atomic store on
        // a software device. Either adds two verbs to the segment: room for them first.
        if (seg.size() + 2 > Batch::kMaxVerbs) {
          run_batches(cl, ts, std::span<Batch>(&seg, 1), cl.ondemand_regs_, ensure);
          seg = Batch();
        }
        if (v.length > 8)
          seg.write(v.remote + rest_offset(v),
                    static_cast<const std::byte*>(v.local) + rest_offset(v), v.length - 8);
        if (!soft) {
          seg.write(v.remote + lock_offset(v),
                    static_cast<const std::byte*>(v.local) + lock_offset(v), 8);
          continue;
        }
        cas_loop(cl, ts, cl.ondemand_regs_, seg, release_store(v), ensure, attempts);
        count(n, [&](VerbCounters& c) { ++c.atomic_releases; });
        continue;
      }
      uint64_t old = cas_loop(cl, ts, cl.ondemand_regs_, seg, v, ensure, attempts);
      count(n, [&](VerbCounters& c) {
        ++c.emulated_masked_cas;
        if (attempts > 1) c.emulation_retries += attempts - 1;
      });
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

}  // namespace dmrt::verbs
