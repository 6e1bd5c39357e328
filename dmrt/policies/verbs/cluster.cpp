#include "dmrt/policies/verbs/cluster.h"

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "dmrt/policies/verbs/cluster_internal.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::verbs {

thread_local ThreadState* tls_state = nullptr;

ThreadState& current(Cluster* c) {
  ThreadState* ts = tls_state;
  if (!ts || ts->cluster != c)
    throw TransportError(
        "verbs endpoint used on an OS thread that is not bound to its cluster: run clients "
        "under Scheduler::run(body, cluster.thread_hooks()) or hold a Cluster::ThreadBinding");
  return *ts;
}

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

  setup_device_memory(me.device_memory_bytes);

  server_cq_ = ibv_create_cq(device_->context(), 64, nullptr, nullptr, 0);
  if (!server_cq_) throw TransportError("ibv_create_cq failed: " + err_text(errno));

  key_ = ClusterKey::load(config_);
  std::string bind_to = me.address;
  if (!me.address.empty()) {
    std::string host;
    uint16_t port;
    wire::split_address(me.address, host, port);
    // Decided on what the host resolves to, never on how it is spelt: a name that starts with
    // "127." (or is "localhost" in a private /etc/hosts) may resolve to any address. Without a
    // secret, the endpoint then binds the very loopback address that was checked.
    std::string checked;
    bool loopback = !key_ && wire::resolves_to_loopback_only(host, port, &checked);
    if (key_) {
      bind_note_ = "bootstrap authenticated by the cluster secret";
    } else if (loopback) {
      bind_to = checked;
      bind_note_ = "no cluster secret: bootstrap unauthenticated (loopback only, " + checked + ")";
    } else if (opts_.allow_unauthenticated) {
      bind_note_ = "no cluster secret: bootstrap UNAUTHENTICATED on " + me.address +
                   " (anyone reaching it can stop the node and read/write its region)";
    } else {
      bind_to = "127.0.0.1:" + std::to_string(port);
      bind_note_ =
          "no cluster secret: bootstrap bound to loopback only (127.0.0.1:" + std::to_string(port) +
          ", not " + host + "); set DMRT_CLUSTER_SECRET or secret_file to serve peers";
    }
  }
  BootstrapHooks hooks;
  hooks.connect = [this](wire::Reader& r) { return answer_connect(r); };
  hooks.stop = [this] { request_stop(); };
  BootstrapLimits limits;
  limits.frame_timeout_ms = opts_.bootstrap_frame_timeout_ms;
  limits.barrier_timeout_ms = opts_.connect_timeout_ms;
  bootstrap_ = std::make_unique<BootstrapServer>(bind_to, key_, std::move(hooks), limits,
                                                 "node " + std::to_string(self_));
  listen_port_ = bootstrap_->port();
  peer_generation_.assign(config_.size(), 0);
  peer_dm_mode_.assign(config_.size(), "unknown");
}

Cluster::~Cluster() {
  stop_.store(true);
  serve_cv_.notify_all();
  bootstrap_.reset();  // stops serving and destroys the QPs held for peers
  threads_.clear();
  if (server_cq_) ibv_destroy_cq(server_cq_);
  if (region_mr_) ibv_dereg_mr(region_mr_);
  if (dm_mr_) ibv_dereg_mr(dm_mr_);
  if (dm_) ibv_free_dm(dm_);
  std::free(dm_host_);
  if (region_) {
    uint64_t len = region_huge_ ? ((region_bytes_ + (2u << 20) - 1) & ~uint64_t((2u << 20) - 1))
                                : region_bytes_;
    munmap(region_, len);
  }
}

void Cluster::setup_device_memory(uint64_t bytes) {
  dm_bytes_ = bytes;
  if (bytes == 0) return;  // "none"
  const uint64_t offered = device_->device_memory_bytes();
  std::string why;
  if (offered == 0) {
    why = device_->name() + " has no device memory (max_dm_size 0)";
  } else if (offered < bytes) {
    why = device_->name() + " offers " + std::to_string(offered) + " bytes of device memory, " +
          std::to_string(bytes) + " asked";
  } else {
    ibv_alloc_dm_attr a{};
    a.length = bytes;
    a.log_align_req = 6;  // atomics need 8-byte words; 64 keeps lock words on their own lines
    dm_ = ibv_alloc_dm(device_->context(), &a);
    if (!dm_) {
      why = "ibv_alloc_dm of " + std::to_string(bytes) + " bytes on " + device_->name() +
            " failed: " + err_text(errno);
    } else {
      // Device memory is not zeroed by the device: write zeros (free locks, empty tables).
      std::vector<std::byte> zero(bytes);
      if (int rc = ibv_memcpy_to_dm(dm_, 0, zero.data(), bytes)) {
        why = "ibv_memcpy_to_dm failed: " + err_text(rc);
      } else {
        // Zero-based: peers address it by offset (its remote address of byte 0 is 0).
        dm_mr_ = ibv_reg_dm_mr(device_->pd(), dm_, 0, bytes, kAccess | IBV_ACCESS_ZERO_BASED);
        if (!dm_mr_) why = "ibv_reg_dm_mr failed: " + err_text(errno);
      }
      if (!why.empty()) {
        ibv_free_dm(dm_);
        dm_ = nullptr;
      }
    }
  }
  if (why.empty()) {
    dm_raddr_ = 0;
    dm_mode_ = "on-chip";
    return;
  }
  // Host fallback: the same addresses, served from a registered host buffer. Never silent.
  dm_host_ = static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) & ~uint64_t{4095}));
  if (!dm_host_) throw Error("cannot allocate the device-memory fallback buffer");
  std::memset(dm_host_, 0, bytes);
  dm_mr_ = ibv_reg_mr(device_->pd(), dm_host_, bytes, kAccess);
  if (!dm_mr_)
    throw TransportError("cannot register the " + std::to_string(bytes) +
                         "-byte device-memory fallback buffer: " + err_text(errno));
  dm_raddr_ = reinterpret_cast<uint64_t>(dm_host_);
  dm_mode_ = "host fallback";
  dm_note_ = why;
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "dmrt verbs: device memory: host fallback (%s): verbs to device-memory "
                 "addresses are served from host memory, without the on-chip speed-up\n",
                 why.c_str());
}

std::string Cluster::device_memory_mode(NodeId n) const {
  if (n == self_) return dm_mode_;
  std::lock_guard<std::mutex> g(serve_mu_);
  return peer_dm_mode_.at(n);
}

std::string Cluster::report() const {
  std::ostringstream os;
  os << device_->report() << "; masked CAS " << masked_report_ << "; node " << self_ << " ("
     << role_name(config_.nodes[self_].role) << ") region " << region_bytes_ << " bytes"
     << (region_huge_ ? " on hugepages" : "")
     << (opts_.hugepages && !region_huge_ ? " (hugepages asked but unavailable; 4 KiB pages)" : "")
     << "; device memory " << dm_mode_;
  if (dm_bytes_)
    os << " (" << dm_bytes_ << " bytes" << (dm_note_.empty() ? "" : ": " + dm_note_) << ")";
  os << "; " << opts_.threads << " client thread(s), QP depth " << opts_.qp_depth << ", staging "
     << opts_.staging_bytes << " bytes/thread in " << opts_.staging_slot << "-byte slots";
  if (listen_port_) os << "; bootstrap on port " << listen_port_ << " (" << bind_note_ << ")";
  return os.str();
}

std::vector<uint8_t> Cluster::exchange(NodeId node,
                                       const std::function<std::vector<uint8_t>(uint64_t)>& request,
                                       uint32_t timeout_ms,
                                       std::shared_ptr<wire::Socket>* session) {
  if (node == self_)  // this process serves that node: answer without the network
    return bootstrap_->handle_local(request(bootstrap_->generation()));
  const std::string& addr = config_.nodes[node].address;
  if (addr.empty())
    throw ConfigError("node " + std::to_string(node) + " (" + role_name(config_.nodes[node].role) +
                      ") has no address in the cluster config, so it cannot be reached over verbs");
  BootstrapCall call = bootstrap_call(addr, request, key_ ? &*key_ : nullptr, timeout_ms,
                                      "node " + std::to_string(node));
  {
    std::lock_guard<std::mutex> g(serve_mu_);
    if (!peer_generation_[node]) peer_generation_[node] = call.generation;
  }
  if (session) *session = std::make_shared<wire::Socket>(std::move(call.socket));
  return std::move(call.reply);
}

void Cluster::request_stop() {
  stop_.store(true);
  serve_cv_.notify_all();
}

void Cluster::serve_until_stopped() {
  std::unique_lock<std::mutex> lk(serve_mu_);
  while (!stop_.load()) serve_cv_.wait_for(lk, std::chrono::milliseconds(200));
}

void Cluster::stop_node(const std::string& address, uint32_t timeout_ms,
                        const ClusterConfig* config) {
  std::optional<ClusterKey> key = ClusterKey::load(config ? *config : ClusterConfig{});
  BootstrapCall call = bootstrap_call(
      address, [](uint64_t) { return wire::Writer(wire::Type::kStop).data(); },
      key ? &*key : nullptr, timeout_ms, "dmrt-node");
  wire::Reader r(std::move(call.reply), "dmrt-node at " + address);
  if (r.type() == wire::Type::kError)
    throw TransportError("dmrt-node at " + address + " refused STOP: " + r.str());
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
      ts->mailbox_counters.by_node.resize(config_.size());
      ts->scratch.resize(ts->free_slots.size());
      for (ThreadState::Scratch& sc : ts->scratch) {  // typical batches never grow these
        sc.tags.resize(16);
        sc.wrs.resize(16);
        sc.sges.resize(16);
      }
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
  uint64_t id = ++barrier_seq_;
  // The barrier names the rendezvous node's run generation as this process first saw it: a
  // node restarted since (a new run) refuses it rather than mixing the runs.
  auto request = [&](uint64_t hello_generation) {
    uint64_t gen;
    {
      std::lock_guard<std::mutex> g(serve_mu_);
      gen = peer_generation_[rendezvous] ? peer_generation_[rendezvous] : hello_generation;
    }
    wire::BarrierRequest b;
    b.generation = gen;
    b.id = id;
    b.parties = parties;
    b.from = self_;
    wire::Writer w(wire::Type::kBarrier);
    wire::write(w, b);
    return w.data();
  };
  std::vector<uint8_t> frame = exchange(rendezvous, request, opts_.connect_timeout_ms + 5000);
  wire::Reader r(std::move(frame), "node " + std::to_string(rendezvous));
  if (r.type() == wire::Type::kError) throw TransportError(r.str());
  if (r.type() != wire::Type::kBarrierOk)
    throw TransportError("malformed barrier answer from node " + std::to_string(rendezvous));
}

ClockOffset Cluster::clock_offset(NodeId ref, unsigned samples) {
  if (ref >= config_.size())
    throw ConfigError("clock reference node " + std::to_string(ref) + " is not in the cluster (" +
                      std::to_string(config_.size()) + " nodes)");
  if (colocated(ref)) return {};  // one process, one clock
  const std::string& addr = config_.nodes[ref].address;
  const std::string what = "node " + std::to_string(ref);
  if (addr.empty())
    throw ConfigError(what + " (" + role_name(config_.nodes[ref].role) +
                      ") has no address in the cluster config, so its clock cannot be read");
  samples = std::clamp<unsigned>(samples, 1, wire::kMaxClockRequests);
  const ClusterKey* key = key_ ? &*key_ : nullptr;
  const uint32_t timeout_ms = opts_.connect_timeout_ms;  // answered at once: no barrier wait
  timespec res{};
  clock_getres(CLOCK_MONOTONIC, &res);
  const uint64_t local_res = uint64_t(res.tv_sec) * 1'000'000'000u + uint64_t(res.tv_nsec);
  std::vector<ClockSample> taken;
  try {
    BootstrapCall call = bootstrap_open(addr, key, timeout_ms, what);
    for (unsigned i = 0; i < samples; ++i) {
      wire::ClockRequest q;
      q.generation = call.generation;
      q.seq = i;
      q.from = self_;
      wire::Writer w(wire::Type::kClock);
      wire::write(w, q);
      BootstrapTiming t;
      bootstrap_request(call, w.data(), key, timeout_ms, &t);
      wire::Reader r(call.reply, what + " at " + addr);
      if (r.type() == wire::Type::kError)
        throw TransportError(what + " at " + addr + " refused the clock request: " + r.str());
      if (r.type() != wire::Type::kClockOk)
        throw TransportError("malformed clock answer from " + what + " at " + addr);
      wire::ClockAnswer a = wire::parse_clock_answer(r);
      if (a.seq != i)
        throw TransportError(what + " at " + addr + " answered clock request " +
                             std::to_string(a.seq) + " to request " + std::to_string(i));
      taken.push_back({t.sent_ns, a.now_ns, t.received_ns, a.resolution_ns + local_res});
    }
  } catch (const TransportError& e) {
    const std::string m = e.what();
    throw TransportError(
        m.find(what) == std::string::npos ? "measuring the clock of " + what + ": " + m : m);
  }
  return best_clock_offset(taken);
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

}  // namespace dmrt::verbs
