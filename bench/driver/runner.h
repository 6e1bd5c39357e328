// The benchmark driver proper: load and run phases of a YCSB workload over one index (behind
// bench/driver/bench_index.h) and one transport, every client a fiber of the Scheduler, every
// operation timed and its verbs attributed to its kind. Compiled once per transport
// (bench/driver/run_TRANSPORT.cpp).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/cli/options.h"
#include "bench/driver/bench_index.h"
#include "bench/driver/group.h"
#include "bench/driver/interrupt.h"
#include "bench/driver/lanes.h"
#include "bench/driver/phases.h"
#include "bench/driver/verify.h"
#include "bench/driver/watchdog.h"
#include "bench/report/merge.h"
#include "bench/report/report.h"
#include "bench/transports/env.h"
#include "bench/workload/key_codec.h"
#include "bench/workload/trace.h"
#include "bench/workload/workload.h"
#include "dmrt/check/history_io.h"
#include "dmrt/check/journal.h"
#include "dmrt/indexes/common/faults.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/liveness.h"
#include "dmrt/runtime/placement.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::bench {

// The phase's progress on stderr (--progress, resolved by main.cpp): "tty" rewrites one line
// every 250 ms; "lines" prints a plain line every 10 s, for logs; "off" prints nothing.
class Progress {
 public:
  Progress(std::string phase, uint64_t target, double seconds, const std::string& mode)
      : enabled_(mode == "tty" || mode == "lines") {
    if (!enabled_) return;
    const bool tty = mode == "tty";
    thread_ = std::thread([this, phase = std::move(phase), target, seconds, tty] {
      auto start = std::chrono::steady_clock::now();
      double printed = 0;
      while (!stop_.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!tty && el - printed < 10) continue;
        printed = el;
        const char* lead = tty ? "\r" : "";
        const char* tail = tty ? "   " : "\n";
        uint64_t d = done.load(std::memory_order_relaxed);
        if (seconds > 0)
          std::fprintf(stderr, "%s%s: %llu ops, %.1f/%.1f s, %.2f Mops/s%s", lead, phase.c_str(),
                       static_cast<unsigned long long>(d), el, seconds, el > 0 ? d / el / 1e6 : 0.0,
                       tail);
        else
          std::fprintf(stderr, "%s%s: %llu/%llu ops (%.0f%%), %.2f Mops/s, %.0f s%s", lead,
                       phase.c_str(), static_cast<unsigned long long>(d),
                       static_cast<unsigned long long>(target), target ? 100.0 * d / target : 100.0,
                       el > 0 ? d / el / 1e6 : 0.0, el, tail);
        std::fflush(stderr);
      }
      if (tty) {
        std::fprintf(stderr, "\r%*s\r", 80, "");
        std::fflush(stderr);
      }
    });
  }
  ~Progress() {
    if (!enabled_) return;
    stop_.store(true);
    thread_.join();
  }
  void add(uint64_t n) {
    if (enabled_) done.fetch_add(n, std::memory_order_relaxed);
  }

  std::atomic<uint64_t> done{0};

 private:
  bool enabled_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// One run over the index `maker` creates, on transport T.
template <Transport T>
class Bench {
 public:
  Bench(const Options& opt, const ClusterConfig& config, Mix mix, const IndexMaker<T>& maker)
      : opt_(opt),
        mix_(mix),
        maker_(maker),
        bytes_(opt.byte_keys()),
        codec_(opt.key_codec()),
        env_(opt, config) {
    const ClusterConfig& c = env_.config();
    compute_ = c.compute_nodes();
    if (compute_.empty()) compute_ = c.memory_nodes();  // no compute node: clients live on node 0
    attached_ = attached_run(env_);
    if (attached_) {
      if (maker.local())
        throw ConfigError("index " + std::string(maker.name()) +
                          " is a local peer in one process's memory: processes cannot share it "
                          "(--attach)");
      compute_ = {attached_->node()};      // every client of this process lives there
      if (attached_->incarnation() > 0) {  // a replacement: files of its own ("{node}" is N.k)
        opt_.json = expand_node(opt_.json_template, attached_->node(), attached_->incarnation());
        opt_.history =
            expand_node(opt_.history_template, attached_->node(), attached_->incarnation());
      }
    }
    if (!opt.cpus.empty()) cpus_ = placement::parse_cpu_list(opt.cpus);
    if (std::string err = plan_run_phases(opt, mix, opt.distribution_given, phases_); !err.empty())
      throw ConfigError(err);
    workers_.resize(static_cast<size_t>(opt.threads) * opt.fibers);
    watch_.reset(new Watchdog::Slot[workers_.size()]);
    if constexpr (kFaultInjection) fault_ = BenchFault::from_env();

    info_.memory_nodes = static_cast<unsigned>(c.memory_nodes().size());
    info_.compute_nodes = static_cast<unsigned>(c.compute_nodes().size());
    info_.local_index = maker.local();
    info_.placement = placement_json();
  }

  // Runs the phases; returns the process exit code (0, or the verifier's verdict).
  int run() {
    open_traces();
    expected_inserts_ = trun_ ? trun_->inserts() : expected_inserts(phases_);

    // A key-set table covers every record the run can insert: expected_inserts_ is already twice
    // what --ops phases insert; a --seconds phase is open-ended, so it gets twice that again.
    const bool timed = std::any_of(phases_.begin(), phases_.end(),
                                   [](const RunPhase& p) { return p.opt.seconds > 0; });
    if (opt_.keyset != "ycsb")
      keys_ = KeyMap(opt_.keyset, opt_.keys + expected_inserts_ * (timed ? 2 : 1) + 64, opt_.seed,
                     opt_.order());
    else
      keys_ = KeyMap(opt_.order());

    IndexOptions& io = io_;
    io.value_size = opt_.value_size;
    io.key_size = static_cast<uint32_t>(opt_.key_size);
    io.cache_bytes = static_cast<uint64_t>(opt_.cache_mb * 1024 * 1024);
    io.expected_keys = opt_.keys + expected_inserts_;
    if (keys_.tabled())
      io.key_space = keys_.max_key();
    else
      io.key_space = opt_.order() == KeyOrder::kOrdered ? io.expected_keys + 1 : 0;
    io.lock_holders = opt_.on_peer_loss == "continue";
    io.clients = static_cast<unsigned>(workers_.size());
    io.compute_nodes = attached_ ? attached_->members() : static_cast<unsigned>(compute_.size());
    io.seed = opt_.seed;

    info_.index_options = maker_.describe(io);

    // Client ids are unique across the processes of a multi-process run: value stamps, histories
    // and lock owners depend on it. This process's clients, then its setup client.
    const auto clients = static_cast<uint32_t>(workers_.size());
    if (attached_) {
      RunGroup& g = *attached_->group;
      id_base_ = g.take_client_ids(clients + 1);
      if (opt_.on_peer_loss == "continue") {
        g.survive_compute_loss();
        liveness_ = std::make_unique<GroupLiveness>(g);
      }
      // A lost peer ends the phase: workers stop at their next operation, and a worker stuck in
      // one (spinning on a lock the lost process held) cannot outlast the grace period.
      g.on_lost([this](const std::string& why) {
        peer_lost_.store(true, std::memory_order_relaxed);
        std::thread([why] {
          std::this_thread::sleep_for(std::chrono::duration<double>(kLostGraceSeconds));
          std::fprintf(stderr, "dmrt-bench: %s; workers still busy %.0f s later: exiting\n",
                       why.c_str(), kLostGraceSeconds);
          std::fflush(stderr);
          std::_Exit(1);
        }).detach();
      });
      // A replacement joins the run phase under way: the barriers before it are behind it.
      if (!attached_->incarnation()) g.barrier("start the load");
    }
    setup_ = std::make_unique<Client<T>>(env_.endpoint(compute_[0], id_base_ + clients));
    setup_->set_liveness(liveness_.get());
    if (attached_) {  // the clock is measured through the setup client (shm: its mailbox)
      clock_start_local_ns_ = setup_clock_ns();
      on_setup_client([&] { clock_start_ = env_.clock_offset(*setup_); });
    }
    ops_ = trun_ ? my_trace_lines() : my_share(opt_.ops);
    if (!trun_) {
      seq_ = std::make_unique<InsertSequence>(opt_.keys);
      lanes_ = {opt_.keys, attached_ ? attached_->members() : 1u,
                attached_ ? attached_->rank() : 0u};
    }
    open_journal();
    if (maker_.bulk_loads(io) &&
        std::any_of(phases_.begin(), phases_.end(), [](const RunPhase& p) { return p.grow > 0; }))
      throw ConfigError("--then keys=: index " + std::string(maker_.name()) +
                        " bulk loads its keys, and a bulk-loaded index does not grow by inserts "
                        "as a load would build it; run each size as its own process");
    if (attached_ && !attached_->creator()) {
      // Another process creates and loads the index: wait for it, then join it.
      attached_->group->await_ready(fingerprint());
      on_setup_client([&] { index_ = maker_.attach(*setup_, io); });
    } else {
      if (attached_) attached_->group->begin_create();
      try {
        PhaseResult load;
        if (maker_.bulk_loads(io)) {
          load = bulk_load_phase(io);
        } else {
          on_setup_client([&] { index_ = maker_.create(*setup_, io); });
          load = load_phase();
        }
        emit(load);
        if (interrupted()) {
          if (attached_) attached_->group->fail();
          return end_interrupted(load);
        }
      } catch (...) {
        if (attached_) attached_->group->fail();  // the waiting processes stop too
        throw;
      }
      if (attached_) attached_->group->ready(fingerprint());
    }
    for (size_t i = 0; i < phases_.size(); ++i) {
      if (i > 0) {
        next_run_phase(phases_[i]);
        if (phases_[i].grow > 0) {
          const PhaseResult g = grow_phase(phases_[i]);
          emit(g);
          if (interrupted()) return end_interrupted(g);
        }
        // After the grow: the run phase, not the grow's inserts, starts from the cold cache.
        if (phases_[i].new_cache && maker_.caches()) new_cache();  // no cache: means nothing
      }
      if (opt_.warmup_ops > 0) {  // not measured: its own line, then the phase proper
        const uint64_t ops = ops_;
        ops_ = my_share(opt_.warmup_ops);
        const PhaseResult w = run_phase("warmup");
        ops_ = ops;
        emit(w);
        if (interrupted()) return end_interrupted(w);
      }
      if (attached_ && !attached_->incarnation()) {
        attached_->group->barrier("start the run");
        attached_->group->run_started();
      }
      const PhaseResult r = run_phase();
      emit(r);
      // No final barrier: the others see this process leave, and name it.
      if (interrupted()) return end_interrupted(r);
    }
    if (attached_) {
      // Every phase ends together: no process stops a memory node or reads the index's final
      // state while another still runs.
      attached_->group->barrier("end the run");
      if (attached_->creator()) attached_->group->run_ended();  // no replacement joins after
      on_setup_client([&] { clock_end_ = env_.clock_offset(*setup_); });
      clock_end_local_ns_ = setup_clock_ns();
    }
    History h;
    if (opt_.verify) {
      h.append(std::move(load_history_));
      for (auto& w : workers_)
        if (w) h.append(std::move(w->history));
    }
    if (attached_ && attached_->members() > 1) {
      // The part is saved before this process says it is done: the creator reads every part
      // once all are (conclude), and read one still being written as truncated.
      const int rc = opt_.verify ? save_part_of_history(std::move(h)) : 0;
      if (rc == 0 && journal_) journal_->discard();  // the part file says it all
      attached_->group->finish();
      return rc;
    }
    if (attached_) attached_->group->finish();
    return opt_.verify ? verify_history(std::move(h), opt_) : 0;
  }

  // The creator of a multi-process run, once every process is done: the merged report of every
  // node's --json part, and the check of the union of their histories, when the parts are files
  // it can read (paths with {node}, on a shared file system). Returns the exit code.
  int conclude(int rc) {
    if (!attached_ || !attached_->creator() || attached_->members() < 2) return rc;
    if (interrupted()) return rc;
    attached_->group->await_all_done();
    // Processes declared dead (--on-peer-loss continue) left no report: the others' are merged,
    // a replacement's beside them, and the merged lines say how many processes ran.
    const std::vector<RunGroup::Incarnation> all = attached_->group->incarnations();
    const std::vector<NodeId>& nodes = attached_->group->spec().compute;
    bool partial = false;
    for (const auto& p : all) {
      if (!p.dead) continue;
      partial = true;
      std::printf(
          "conclude: compute node %u (rank %u%s) died mid-run; its report is not "
          "merged%s\n",
          static_cast<unsigned>(nodes[p.rank]), p.rank,
          p.number ? (", incarnation " + std::to_string(p.number)).c_str() : "",
          opt_.verify ? ", its journal stands for its history" : "");
    }
    if (!opt_.merged_json.empty()) {
      std::vector<std::string> parts;
      for (const auto& p : all)
        if (!p.dead) parts.push_back(expand_node(opt_.json_template, nodes[p.rank], p.number));
      // The cluster's table on stdout (unless --quiet), then its JSON.
      if (!opt_.quiet) {
        std::printf("\n== the cluster: %zu compute processes, merged ==\n", parts.size());
        std::fflush(stdout);
        if (int m = merge_reports(parts, "", partial); m != 0) return m;
      }
      if (int m = merge_reports(parts, opt_.merged_json, partial); m != 0) return m;
      std::printf("merged: the JSON of %zu compute processes written to %s by node %u\n",
                  parts.size(), opt_.merged_json.c_str(), static_cast<unsigned>(attached_->node()));
    }
    if (opt_.verify && rc == 0 && opt_.history_template.find("{node}") != std::string::npos) {
      std::vector<std::string> files;  // every incarnation's: a dead one's journal stands for it
      for (const auto& p : all)
        files.push_back(expand_node(opt_.history_template, nodes[p.rank], p.number));
      std::printf("verify: the union of %zu histories, checked by node %u\n", files.size(),
                  static_cast<unsigned>(attached_->node()));
      return check_history_files(files, opt_);
    }
    return rc;
  }

 private:
  struct Worker {
    std::unique_ptr<Client<T>> client;
    std::unique_ptr<BenchHandle> handle;
    Rng rng{1};
    std::optional<KeyChooser> chooser;
    std::array<KindResult, kOpKinds> acc{};
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t stamp = 0;  // per-writer value sequence
    std::string value, out;
    std::vector<std::pair<Key, std::string>> rows;
    std::string kbuf;            // --key-size > 8: the current key's bytes (its capacity is reused)
    std::string_view trace_key;  // a byte-key trace's current key (its line's bytes)
    std::vector<std::pair<std::string, std::string>> brows;  // a byte-key scan's rows
    HistoryRecorder history;                                 // --verify: this client's operations
    std::vector<ScanRow> jrows;                              // a scan's rows for the journal
    Watchdog::Slot* watch = nullptr;  // this worker's slot of the stall watchdog
    uint64_t t0 = 0, t1 = 0;          // the last timed() call's invocation and response
  };

  // Runs f on one fiber of a 1x1 scheduler (so that transports whose verbs need a fiber work).
  template <class F>
  void on_setup_client(F&& f) {
    Scheduler s({1, 1});
    s.run([&](const WorkerId&) { f(); }, thread_hooks());
  }

  // The transport's thread hooks, and with --cpus each thread bound to one CPU of the list in
  // turn (thread t: the t-th CPU, wrapping around).
  ThreadHooks thread_hooks() {
    ThreadHooks h = env_.hooks();
    if (cpus_.empty()) return h;
    auto start = std::move(h.on_start);
    h.on_start = [this, start](unsigned t) {
      placement::bind_thread({cpus_[t % cpus_.size()]});
      if (start) start(t);
    };
    return h;
  }

  // Where this process runs (--cpus, --numa-node, --attach), for the JSON; null when none given.
  nlohmann::json placement_json() const {
    if (cpus_.empty() && opt_.numa_node < 0 && !attached_) return nullptr;
    const int host_nodes = placement::host_numa_nodes();
    nlohmann::json j = {{"cpus", placement::current_cpus()},
                        {"thread_cpus", cpus_},
                        {"numa_node", opt_.numa_node},
                        {"host_numa_nodes", host_nodes}};
    if (host_nodes == 1) {
      j["far_socket"] =
          "none: this host has one NUMA node; the far-memory cost model (--shm-latency-ns, "
          "--shm-preset) stands in for the far socket";
      if ((!opt_.quiet || attached_) && opt_.transport == "shm")
        std::fprintf(stderr,
                     "dmrt-bench: this host has one NUMA node: no memory is on a far socket; the "
                     "far-memory cost model (--shm-latency-ns, --shm-preset) stands in for it\n");
    }
    return j;
  }

  // What the index was built from, as the creator of a multi-process run publishes it and the
  // others check it: everything that shapes the index and the keys it was loaded with.
  uint64_t fingerprint() const {
    std::string s = opt_.index + "|" + std::to_string(opt_.keys) + "|" +
                    std::to_string(opt_.value_size) + "|" + std::to_string(opt_.key_size) + "|" +
                    (bytes_ ? opt_.key_format : "") + "|" + opt_.key_order + "|" + opt_.keyset +
                    "|" + std::to_string(opt_.seed) + "|" + info_.index_options.dump();
    if (tload_)  // every process cuts the same files into the same parts
      s += "|" + opt_.trace_load + "|" + opt_.trace_run + "|" + std::to_string(workers_.size());
    return std::hash<std::string>{}(s) | 1;  // never 0, which no creator has written
  }

  // The journal of --verify with --on-peer-loss continue (shm only): next to the part's history
  // file, sized for every operation this process may run (sparse: only what is written takes
  // room). Only there can the run go on without a process, and the check need its journal; a
  // pool shared across hosts (a file on a shared file system, which may not map shared) cannot
  // fence a dead peer, so its runs end at a loss and keep no journal either.
  void open_journal() {
    if (!opt_.verify || !attached_ || attached_->members() < 2 || opt_.transport != "shm" ||
        opt_.on_peer_loss != "continue" || opt_.history.empty())
      return;
    uint64_t ops = opt_.keys + 4096, rows = 0;
    for (const RunPhase& p : phases_) {
      const uint64_t n = p.opt.seconds > 0 ? std::min<uint64_t>(opt_.verify_max_ops, 1ull << 27)
                                           : my_share(p.opt.ops);
      ops += 2 * n;  // a read-modify-write is two calls
      if (p.mix.scan > 0) rows += n * p.mix.max_scan;
    }
    std::vector<uint32_t> nodes;
    for (NodeId n : attached_->group->spec().compute) nodes.push_back(n);
    journal_ = HistoryJournal::create(opt_.history + ".journal", ops, rows, attached_->rank(),
                                      nodes, attached_->incarnation());
  }

  // --verify with --attach: this process saw only its own clients' operations; the check is of
  // the union of every process's history (dmrt-check FILE...), so it saves its part.
  int save_part_of_history(History&& h) {
    // Onto the reference clock, with the bound the checker widens every operation by.
    // A bound of 0 is no measurement: the processes share this host's clock (shm), exactly.
    const bool shared = clock_start_.bound_ns == 0 && clock_end_.bound_ns == 0;
    const ClockOffset c = shared ? ClockOffset{}
                                 : clock_offset_over(clock_start_, clock_start_local_ns_,
                                                     clock_end_, clock_end_local_ns_);
    if (!shared) to_reference_clock(h, c);  // sets h.clock_bound_ns
    // Which part it is, so that dmrt-check refuses a set with parts missing.
    h.part_rank = attached_->rank();
    h.part_incarnation = attached_->incarnation();
    for (NodeId n : attached_->group->spec().compute) h.part_nodes.push_back(n);
    try {
      save_history(h, opt_.history);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "history: %s\n", e.what());
      return 2;
    }
    std::printf(
        "history: %zu operations of node %u written to %s (client ids %u to %u); check the union "
        "of every process's history with dmrt-check FILE1 FILE2 ...\n",
        h.ops.size(), static_cast<unsigned>(attached_->node()), opt_.history.c_str(), id_base_,
        id_base_ + static_cast<uint32_t>(workers_.size()));  // the last: the setup/bulk loader
    return 0;
  }

  Worker& worker(const WorkerId& id) {
    auto& slot = workers_[id.index];
    if (!slot) {
      slot = std::make_unique<Worker>();
      const uint32_t client = id_base_ + id.index;  // unique across processes (--attach)
      slot->history = HistoryRecorder(client);
      slot->watch = &watch_[id.index];
      slot->client =
          std::make_unique<Client<T>>(env_.endpoint(compute_[id.index % compute_.size()], client));
      slot->client->set_liveness(liveness_.get());
      slot->watch->progress.store(&slot->client->progress(), std::memory_order_release);
      slot->rng = Rng(opt_.seed * 0x9e3779b97f4a7c15ull + client + 1);
      slot->value.reserve(opt_.value_size);
      slot->kbuf.reserve(opt_.key_size);
    }
    if (!slot->handle) slot->handle = index_->handle(*slot->client);  // none after new_cache()
    return *slot;
  }

  // One timed index call with its verbs attributed to `kind`. `op` returns success.
  template <class Op>
  void timed(Worker& w, OpKind kind, Key key, Op&& op) {
    Client<T>& c = *w.client;
    Watchdog::Slot& watch = *w.watch;
    watch.begin(kind, key);
    struct End {  // also when op() throws: a failed operation is not a stalled one
      Watchdog::Slot& s;
      ~End() { s.end(); }
    } end{watch};
    if constexpr (kFaultInjection)
      if (fault_.at) fault_.apply(static_cast<unsigned>(&watch - watch_.get()), watch, c);
    const VerbCounters before = c.counters().total;
    const VerbCounters mem_before = c.counters().by_role[0];
    const VerbCounters cmp_before = c.counters().by_role[1];
    const uint64_t t0 = c.now_ns();
    const bool ok = op();
    const uint64_t t1 = c.now_ns();
    KindResult& k = w.acc[static_cast<size_t>(kind)];
    ++k.count;
    if (!ok) ++k.failed;
    k.latency.record(t1 - t0);
    k.total += c.counters().total - before;
    k.by_role[0] += c.counters().by_role[0] - mem_before;
    k.by_role[1] += c.counters().by_role[1] - cmp_before;
    w.t0 = t0;
    w.t1 = t1;
  }

  // --- the operations ---------------------------------------------------------------------------
  // With --verify each call is recorded (value hashes, on the transport clock) after it returns.
  // --key-size > 8: the index sees codec_.encode(key) (bench/workload/key_codec.h), encoded into
  // the worker's buffer before the timed call; histories keep the integer key.
  std::string_view key_bytes_of(Worker& w, Key key) {
    if (!bytes_) return {};
    if (!w.trace_key.empty()) return w.trace_key;  // a byte-string key from a trace file
    codec_.encode(key, w.kbuf);
    return w.kbuf;
  }
  bool do_insert(Worker& w, uint32_t id, uint64_t record) {
    return insert_key(w, id, keys_(record));
  }
  bool insert_key(Worker& w, uint32_t id, Key key) {
    make_value(w.value, opt_.value_size, key, value_stamp(id, ++w.stamp));
    bool ok = false;
    const std::string_view kb = key_bytes_of(w, key);
    const size_t j = jot(w, OpKind::kInsert, key, 0, &w.value);
    timed(w, OpKind::kInsert, key, [&] {
      return ok = bytes_ ? w.handle->insert(kb, w.value) : w.handle->insert(key, w.value);
    });
    if (opt_.verify) w.history.insert(key, w.value, ok, w.t0, w.t1);
    jot_done(j, ok, 0, w.t1);
    return ok;
  }
  void do_search(Worker& w, uint32_t, Key key) {
    bool ok = false;
    const std::string_view kb = key_bytes_of(w, key);
    const size_t j = jot(w, OpKind::kSearch, key);
    timed(w, OpKind::kSearch, key,
          [&] { return ok = bytes_ ? w.handle->search(kb, w.out) : w.handle->search(key, w.out); });
    if (opt_.verify) w.history.search(key, ok, w.out, w.t0, w.t1);
    jot_done(j, ok, ok && journal_ ? value_hash(w.out) : 0, w.t1);
  }
  void do_update(Worker& w, uint32_t id, Key key) {
    make_value(w.value, opt_.value_size, key, value_stamp(id, ++w.stamp));
    bool ok = false;
    const std::string_view kb = key_bytes_of(w, key);
    const size_t j = jot(w, OpKind::kUpdate, key, 0, &w.value);
    timed(w, OpKind::kUpdate, key, [&] {
      return ok = bytes_ ? w.handle->update(kb, w.value) : w.handle->update(key, w.value);
    });
    if (opt_.verify) w.history.update(key, w.value, ok, w.t0, w.t1);
    jot_done(j, ok, 0, w.t1);
  }
  void do_rmw(Worker& w, uint32_t id, Key key) {
    make_value(w.value, opt_.value_size, key, value_stamp(id, ++w.stamp));
    // Timed and counted as one operation; recorded as its two index calls (search, then update),
    // split at the update's start: the index gives no atomicity across them.
    bool found = false, updated = false;
    uint64_t mid = 0;
    const std::string_view kb = key_bytes_of(w, key);
    // Journaled as the two calls the history records, both invoked before either runs: an
    // interval that contains the real one.
    const size_t js = jot(w, OpKind::kSearch, key);
    const size_t ju = jot(w, OpKind::kUpdate, key, 0, &w.value);
    timed(w, OpKind::kRmw, key, [&] {
      found = bytes_ ? w.handle->search(kb, w.out) : w.handle->search(key, w.out);
      if (opt_.verify) mid = w.client->now_ns();
      updated = bytes_ ? w.handle->update(kb, w.value) : w.handle->update(key, w.value);
      return found && updated;
    });
    if (opt_.verify) {
      w.history.search(key, found, w.out, w.t0, mid);
      w.history.update(key, w.value, updated, mid, w.t1);
    }
    jot_done(js, found, found && journal_ ? value_hash(w.out) : 0, mid);
    jot_done(ju, updated, 0, w.t1);
  }
  void do_remove(Worker& w, uint32_t, Key key) {
    bool ok = false;
    const std::string_view kb = key_bytes_of(w, key);
    const size_t j = jot(w, OpKind::kRemove, key);
    timed(w, OpKind::kRemove, key,
          [&] { return ok = bytes_ ? w.handle->remove(kb) : w.handle->remove(key); });
    if (opt_.verify) w.history.remove(key, ok, w.t0, w.t1);
    jot_done(j, ok, 0, w.t1);
  }
  void do_scan(Worker& w, uint32_t, Key key, uint32_t count) {
    if (!maker_.scan())
      throw ConfigError("index " + std::string(maker_.name()) + " does not support scans");
    const std::string_view kb = key_bytes_of(w, key);
    const size_t j = jot(w, OpKind::kScan, key, count);
    timed(w, OpKind::kScan, key, [&] {
      if (bytes_) {
        w.handle->scan(kb, count, w.brows);
        return !w.brows.empty() && w.brows.front().first == kb;
      }
      w.handle->scan(key, count, w.rows);
      return !w.rows.empty() && w.rows.front().first == key;
    });
    if (opt_.verify) {
      if (bytes_) decode_rows(w);
      w.history.scan(key, count, w.rows, w.t0, w.t1);
      if (journal_) {
        w.jrows.clear();
        for (const auto& [k, v] : w.rows) w.jrows.push_back({k, value_hash(v)});
        journal_->respond_scan(j, w.jrows, w.t1);
      }
    }
  }
  // --verify in a run of several shm processes: each operation is journaled (invoked before it
  // runs, returned after; dmrt/check/journal.h), so that a process killed mid-run still leaves
  // its part of the history, with at most its in-flight operations pending. `count`: a scan's;
  // `value`: the value written. Nothing to do, not even a hash, without a journal.
  size_t jot(Worker& w, OpKind kind, Key key, uint64_t count = 0,
             const std::string* value = nullptr) {
    if (!journal_) return HistoryJournal::kFull;
    Operation op;
    op.kind = kind;
    op.key = key;
    op.arg = kind == OpKind::kScan ? count : value ? value_hash(*value) : 0;
    op.ok = kind == OpKind::kScan;
    op.client = w.history.client();
    op.invoke_ns = w.client->now_ns();
    return journal_->invoke(op);
  }
  void jot_done(size_t slot, bool ok, uint64_t out, uint64_t response_ns) {
    if (journal_) journal_->respond(slot, ok, out, response_ns);
  }

  // A byte-key scan's rows as the history records them: each key decoded to its integer (order
  // kept: the encoding preserves it). A key that is no record's encoding (truncated, corrupted)
  // fails the run: the index returned a key nobody wrote.
  void decode_rows(Worker& w) {
    w.rows.resize(w.brows.size());
    for (size_t i = 0; i < w.brows.size(); ++i) {
      const std::optional<Key> k = codec_.decode(w.brows[i].first);
      if (!k)
        throw std::runtime_error("scan returned the key " + hex_of(w.brows[i].first) +
                                 ", which is no key of this run's --key-format " + opt_.key_format +
                                 " --key-size " + std::to_string(opt_.key_size));
      w.rows[i].first = *k;
      std::swap(w.rows[i].second, w.brows[i].second);
    }
  }
  static std::string hex_of(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = std::to_string(s.size()) + " bytes 0x";
    for (size_t i = 0; i < s.size() && i < 64; ++i) {
      out += kHex[static_cast<uint8_t>(s[i]) >> 4];
      out += kHex[static_cast<uint8_t>(s[i]) & 15];
    }
    if (s.size() > 64) out += "...";
    return out;
  }
  // A worker failed: the others stop at their next operation (the scheduler then reports the
  // first failure), so a run ends in bounded time instead of finishing its work around an error.
  // So does SIGINT or SIGTERM (bench/driver/interrupt.h).
  bool stopping() const {
    return (sched_ && sched_->stop_requested()) || peer_lost_.load(std::memory_order_relaxed) ||
           interrupted() != 0;
  }

  static std::string host_name() {
    char buf[256] = {};
    return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string();
  }

  // The transport clock the histories use (Endpoint::now_ns: steady_clock on shm and verbs).
  static uint64_t setup_clock_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  // This process's part of a cluster-wide count: the total split over the compute processes.
  uint64_t my_share(uint64_t total) const {
    if (!attached_) return total;
    const uint64_t n = attached_->members(), r = attached_->rank();
    return total / n + (r < total % n ? 1 : 0);
  }

  // --- phases -----------------------------------------------------------------------------------
  // The next --then phase: its run parameters, on the index as the last phase left it (its grow
  // and its new cache follow, in run()). Its keys count the records a grow phase will add.
  void next_run_phase(const RunPhase& p) {
    opt_.workload = p.opt.workload;
    opt_.distribution = p.opt.distribution;
    opt_.zipf_theta = p.opt.zipf_theta;
    opt_.ops = p.opt.ops;
    opt_.seconds = p.opt.seconds;
    opt_.cache_mb = p.opt.cache_mb;
    opt_.keys = p.opt.keys;
    opt_.warmup_ops = p.opt.warmup_ops;
    mix_ = p.mix;
    ops_ = my_share(opt_.ops);
  }

  // Joins the index anew with a cold cache of --cache-mb: the handles and the index object that
  // held the old cache go, and each worker makes a new handle at its next operation.
  void new_cache() {
    io_.cache_bytes = static_cast<uint64_t>(opt_.cache_mb * 1024 * 1024);
    info_.index_options = maker_.describe(io_);
    for (auto& w : workers_)
      if (w) w->handle.reset();
    on_setup_client([&] {
      index_.reset();
      index_ = maker_.attach(*setup_, io_);
    });
  }

  template <class Body>
  PhaseResult phase(const std::string& name, uint64_t target, double seconds, Body&& body) {
    for (auto& w : workers_)
      if (w) {
        w->acc = {};
        w->start_ns = w->end_ns = 0;
      }
    env_.begin_phase();
    {
      Progress progress(name, target, seconds, opt_.progress);
      if (peer_lost_.load()) throw PeerLost(attached_->group->lost());
      Scheduler sched({opt_.threads, opt_.fibers});
      sched_ = &sched;
      for (size_t i = 0; i < workers_.size(); ++i) watch_[i].end();
      Watchdog watchdog(name, watch_.get(), static_cast<unsigned>(workers_.size()),
                        opt_.stall_seconds, sched);
      struct Forget {
        const Scheduler*& s;
        ~Forget() { s = nullptr; }
      } forget{sched_};
      sched.run(
          [&](const WorkerId& id) {
            Worker& w = worker(id);
            w.start_ns = w.client->now_ns();
            body(w, id, progress);
            w.end_ns = w.client->now_ns();
          },
          thread_hooks());
    }
    if (peer_lost_.load()) throw PeerLost(attached_->group->lost());
    PhaseResult r;
    r.phase = name;
    if (int sig = interrupted()) r.interrupted = signal_name(sig);
    uint64_t start = ~0ull, end = 0;
    for (auto& w : workers_) {
      if (!w) continue;
      for (size_t k = 0; k < kOpKinds; ++k) {
        r.kinds[k].merge(w->acc[k]);
        r.all.merge(w->acc[k]);
      }
      start = std::min(start, w->start_ns);
      end = std::max(end, w->end_ns);
    }
    r.seconds = end > start ? static_cast<double>(end - start) / 1e9 : 0.0;
    r.start_ns = start;
    r.end_ns = end;
    finish_phase(r);
    return r;
  }

  void finish_phase(PhaseResult& r) {
    if (attached_) {
      // The window on the reference clock (the group's memory node's, across hosts), so that
      // --merge can take the union of the processes' windows.
      const auto on_ref = [&](uint64_t t) {
        return static_cast<uint64_t>(static_cast<int64_t>(t) + clock_start_.offset_ns);
      };
      r.process = {
          {"node", attached_->node()},
          {"rank", attached_->rank()},
          {"incarnation", attached_->incarnation()},
          {"members", attached_->members()},
          {"compute_nodes", attached_->group->spec().compute},
          {"pid", static_cast<long>(::getpid())},
          {"host", host_name()},
          {"creator", attached_->creator()},
          {"client_ids", {id_base_, id_base_ + workers_.size()}},
          {"window_ns", {on_ref(r.start_ns), on_ref(r.end_ns)}},
          {"clock", {{"offset_ns", clock_start_.offset_ns}, {"bound_ns", clock_start_.bound_ns}}}};
    }
    r.pool_bytes_used = env_.pool_bytes_used();
    env_.end_phase(r);
    on_setup_client([&] {
      r.index_stats = index_->stats(*setup_);
      for (auto& w : workers_)
        if (w && w->handle) r.cache_bytes += w->handle->cache_bytes();
      r.cache_bytes += index_->shared_cache_bytes();  // per compute node, counted once
    });
  }

  // The load phase of an index that bulk loads (IndexMaker::bulk_loads): the setup client
  // creates the index with every load record, sorted, and that creation is the whole phase. Its
  // transport time is the phase's seconds, its verbs and bytes are counted as `keys` inserts
  // (per_op: per key loaded); there is no per-key latency. With --verify each key is recorded as
  // an insert spanning the whole load.
  PhaseResult bulk_load_phase(IndexOptions io) {
    if (bytes_)
      throw ConfigError("index " + opt_.index +
                        " bulk loads integer keys: --key-size > 8 needs its load as inserts");
    std::vector<std::pair<Key, uint64_t>> recs(opt_.keys);
    if (tload_)
      trace_load_keys(recs);
    else
      for (uint64_t rec = 0; rec < opt_.keys; ++rec) recs[rec] = {keys_(rec), rec};
    std::sort(recs.begin(), recs.end());
    std::vector<Key> sorted(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) sorted[i] = recs[i].first;
    const auto loader = id_base_ + static_cast<uint32_t>(workers_.size());  // an id of its own
    BulkLoad load;
    load.keys = sorted;
    load.value_of = [&](Key k) {
      auto it = std::lower_bound(recs.begin(), recs.end(), std::pair<Key, uint64_t>{k, 0});
      std::string v;
      make_value(v, opt_.value_size, k, value_stamp(loader, it->second + 1));
      return v;
    };
    io.bulk_load = &load;
    PhaseResult r;
    r.phase = "load";
    env_.begin_phase();
    uint64_t t0 = 0, t1 = 0;
    KindResult& k = r.kinds[static_cast<size_t>(OpKind::kInsert)];
    on_setup_client([&] {
      const auto before = setup_->counters();
      t0 = setup_->now_ns();
      index_ = maker_.create(*setup_, io);
      t1 = setup_->now_ns();
      const auto& after = setup_->counters();
      k.total = after.total - before.total;
      k.by_role[0] = after.by_role[0] - before.by_role[0];
      k.by_role[1] = after.by_role[1] - before.by_role[1];
    });
    k.count = opt_.keys;
    r.all.merge(k);
    r.seconds = static_cast<double>(t1 - t0) / 1e9;
    r.start_ns = t0;
    r.end_ns = t1;
    finish_phase(r);
    if (opt_.verify) {
      load_history_ = HistoryRecorder(loader);
      for (Key key : sorted) load_history_.insert(key, load.value_of(key), true, t0, t1);
    }
    return r;
  }

  PhaseResult load_phase() {
    if (tload_)  // one part of the load file per client of this (the creating) process
      return phase("load", tload_->lines(), 0, [&](Worker& w, const WorkerId& id, Progress& p) {
        replay(w, id_base_ + id.index, *tload_, id.index, p);
      });
    std::atomic<uint64_t> next{0};
    constexpr uint64_t kChunk = 32;
    return phase("load", opt_.keys, 0, [&](Worker& w, const WorkerId& id, Progress& p) {
      for (;;) {
        if (stopping()) break;
        uint64_t first = next.fetch_add(kChunk, std::memory_order_relaxed);
        if (first >= opt_.keys) break;
        uint64_t last = std::min(first + kChunk, opt_.keys);
        for (uint64_t rec = first; rec < last && !stopping(); ++rec) {
          do_insert(w, id_base_ + id.index, rec);
          env_.between_ops(*w.client);
        }
        p.add(last - first);
      }
    });
  }

  // A --then step's keys=N: the next p.grow records of the insert sequence (after any the earlier
  // phases inserted), inserted as the load phase inserts its records. The index is then what a
  // load of that many records leaves, save for sizing: expected_keys already counted them all.
  PhaseResult grow_phase(const RunPhase& p) {
    InsertSequence& seq = *seq_;
    std::atomic<uint64_t> claimed{0};
    constexpr uint64_t kChunk = 32;
    const uint64_t grow = my_share(p.grow);  // the processes grow it together, each its lane
    return phase("grow", grow, 0, [&](Worker& w, const WorkerId& id, Progress& pr) {
      for (;;) {
        if (stopping()) break;
        const uint64_t first = claimed.fetch_add(kChunk, std::memory_order_relaxed);
        if (first >= grow) break;
        const uint64_t n = std::min(kChunk, grow - first);
        for (uint64_t i = 0; i < n && !stopping(); ++i) {
          const uint64_t rec = seq.next();
          do_insert(w, id_base_ + id.index, lanes_(rec));
          seq.acknowledge(rec);
          env_.between_ops(*w.client);
        }
        pr.add(n);
      }
    });
  }

  // `name`: "run", or "warmup" (--warmup-ops: the same mix, ops_ operations, not the phase's).
  PhaseResult run_phase(const char* name = "run") {
    if (trun_)  // one part of the run file per client of the experiment
      return phase("run", ops_, 0, [&](Worker& w, const WorkerId& id, Progress& p) {
        replay(w, id_base_ + id.index, *trun_, trace_part(id.index), p);
      });
    InsertSequence& seq = *seq_;  // one for every phase: inserts go on where the last one ended
    // Over the records present when the phase starts and those it may insert, as a run of this
    // phase alone would choose (--then: the earlier phases' inserts count as loaded).
    const ChooserSpec spec = make_chooser_spec(opt_.dist(), opt_.zipf_theta, seq.limit(),
                                               expected_inserts({{opt_, mix_, false}}));
    for (auto& w : workers_)
      if (w) w->chooser.reset();

    std::atomic<uint64_t> claimed{0};
    std::atomic<uint64_t> shared_deadline{0};
    const bool warmup = std::string_view(name) != "run";
    const bool timed_run = opt_.seconds > 0 && !warmup;  // a warm-up counts operations
    const uint64_t span_ns = static_cast<uint64_t>(opt_.seconds * 1e9);
    constexpr uint64_t kChunk = 16;

    std::atomic<bool> history_full{false};
    PhaseResult r = phase(
        name, ops_, timed_run ? opt_.seconds : 0, [&](Worker& w, const WorkerId& id, Progress& p) {
          if (!w.chooser) w.chooser.emplace(spec);
          // One deadline for the phase, set by the first client to start (transport clock).
          uint64_t deadline = 0;
          if (timed_run) {
            uint64_t mine = w.client->now_ns() + span_ns, none = 0;
            deadline = shared_deadline.compare_exchange_strong(none, mine) ? mine : none;
          }
          uint64_t budget = 0;
          for (;;) {
            if (stopping()) break;
            if (timed_run) {
              if (w.client->now_ns() >= deadline) break;
              // A timed run has no length to check up front: --verify bounds its history instead.
              if (opt_.verify &&
                  claimed.fetch_add(1, std::memory_order_relaxed) >= opt_.verify_max_ops) {
                history_full.store(true, std::memory_order_relaxed);
                break;
              }
              budget = kChunk;
            } else if (budget == 0) {
              uint64_t first = claimed.fetch_add(kChunk, std::memory_order_relaxed);
              if (first >= ops_) break;
              budget = std::min(kChunk, ops_ - first);
            }
            uint64_t batch = timed_run ? 1 : budget;
            for (uint64_t i = 0; i < batch && !stopping(); ++i) {
              one_op(w, id_base_ + id.index, seq);
              env_.between_ops(*w.client);
            }
            budget -= batch;
            p.add(batch);
          }
        });
    if (history_full.load())
      std::fprintf(stderr,
                   "dmrt-bench: --verify: the run phase stopped after %llu operations, the most "
                   "a history may hold on this machine (shorten --seconds or use --ops)\n",
                   static_cast<unsigned long long>(opt_.verify_max_ops));
    return r;
  }

  void one_op(Worker& w, uint32_t id, InsertSequence& seq) {
    OpKind kind = pick_op(mix_, w.rng);
    if (kind == OpKind::kInsert) {
      uint64_t rec = seq.next();
      do_insert(w, id, lanes_(rec));
      seq.acknowledge(rec);
      return;
    }
    const Key key = keys_(lanes_(w.chooser->next(w.rng, seq.limit())));
    const uint32_t count =
        kind == OpKind::kScan ? 1 + static_cast<uint32_t>(w.rng.below(mix_.max_scan)) : 0;
    do_op(w, id, kind, key, count);
  }
  // One operation of `kind` on `key` (`count`: a scan's length); the generator and the trace
  // replay both go through it.
  void do_op(Worker& w, uint32_t id, OpKind kind, Key key, uint32_t count) {
    switch (kind) {
      case OpKind::kInsert:
        insert_key(w, id, key);
        break;
      case OpKind::kSearch:
        do_search(w, id, key);
        break;
      case OpKind::kUpdate:
        do_update(w, id, key);
        break;
      case OpKind::kRmw:
        do_rmw(w, id, key);
        break;
      case OpKind::kScan:
        do_scan(w, id, key, count);
        break;
      case OpKind::kRemove:
        do_remove(w, id, key);
        break;
    }
  }

  // After a signal: the phases measured are written (the last marked interrupted); no check runs
  // on a history cut short. Returns the shell's exit code for the signal.
  int end_interrupted(const PhaseResult& r) const {
    const int sig = interrupted();
    std::fprintf(stderr,
                 "dmrt-bench: interrupted by %s in the %s phase after %llu operations%s%s\n",
                 signal_name(sig), r.phase.c_str(), static_cast<unsigned long long>(r.all.count),
                 opt_.json.empty() ? "" : "; the phases measured are in ", opt_.json.c_str());
    if (opt_.verify) std::fprintf(stderr, "dmrt-bench: --verify: no check of an interrupted run\n");
    return interrupted_exit_code(sig);
  }

  // --- trace files (--trace-load, --trace-run; bench/workload/trace.h)
  // ------------------------------------ Measures and cuts the files before the index is sized: the
  // load file's lines are the keys, the run file's INSERTs the inserts to expect. The run file is
  // cut into one part per client of the whole experiment (every process has the same threads x
  // fibers: the fingerprint checks it), the load file into one part per client of the process that
  // loads.
  void open_traces() {
    if (opt_.trace_load.empty()) return;
    const auto kind = bytes_ ? trace::KeyKind::kBytes : trace::KeyKind::kInteger;
    tload_.emplace(opt_.trace_load, static_cast<unsigned>(workers_.size()), kind, opt_.key_size);
    opt_.keys = tload_->lines();
    if (!opt_.trace_run.empty()) {
      const uint64_t members = attached_ ? attached_->members() : 1;
      trun_.emplace(opt_.trace_run, static_cast<unsigned>(members * workers_.size()), kind,
                    opt_.key_size);
    }
    for (const auto* f : {&*tload_, trun_ ? &*trun_ : nullptr})
      if (f && f->count(OpKind::kScan) > 0 && !maker_.scan())
        throw ConfigError("index " + opt_.index + " does not support scans, and " + f->path() +
                          " has " + std::to_string(f->count(OpKind::kScan)) + " SCAN lines");
  }
  unsigned trace_part(size_t worker) const {
    return static_cast<unsigned>((attached_ ? attached_->rank() : 0) * workers_.size() + worker);
  }
  uint64_t my_trace_lines() const {
    uint64_t n = 0;
    for (size_t i = 0; i < workers_.size(); ++i) n += trun_->part_lines(trace_part(i));
    return n;
  }
  // A bulk load's keys from the load file, in file order (the record number is the line's
  // place). Every line must be an INSERT of a key not inserted before: a bulk load builds the
  // index from a set of keys, with no operation to replay in between.
  void trace_load_keys(std::vector<std::pair<Key, uint64_t>>& recs) {
    uint64_t n = 0;
    trace::Op op;
    for (unsigned p = 0; p < tload_->parts(); ++p) {
      auto r = tload_->reader(p);
      while (r.next(op)) {
        if (op.kind != OpKind::kInsert)
          throw ConfigError(opt_.trace_load + ":" + std::to_string(r.line_number()) + ": index " +
                            opt_.index +
                            " bulk loads its load phase, which takes INSERT lines only");
        recs[n] = {op.key, n};
        ++n;
      }
    }
    std::vector<Key> keys(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) keys[i] = recs[i].first;
    std::sort(keys.begin(), keys.end());
    if (auto d = std::adjacent_find(keys.begin(), keys.end()); d != keys.end())
      throw ConfigError(opt_.trace_load + ": key " + std::to_string(*d - 1) +
                        " is inserted twice; index " + opt_.index +
                        " bulk loads its load phase, a set of distinct keys");
  }
  // Runs one part of a trace file, line by line, on this worker's client.
  void replay(Worker& w, uint32_t id, const trace::TraceFile& f, unsigned part, Progress& p) {
    auto r = f.reader(part);
    trace::Op op;
    while (!stopping() && r.next(op)) {
      w.trace_key = op.bytes;
      do_op(w, id, op.kind, op.key, op.scan_count);
      w.trace_key = {};
      env_.between_ops(*w.client);
      p.add(1);
    }
  }

  void emit(const PhaseResult& r) {
    if (!opt_.quiet) print_phase(opt_, info_, r);
    if (!opt_.json.empty()) write_json_line(opt_.json, phase_json(opt_, info_, r));
  }

  Options opt_;
  Mix mix_;
  const IndexMaker<T>& maker_;  // the index's run(), alive for the whole run
  bool bytes_;                  // --key-size > 8: the index takes codec_'s byte-string keys
  KeyCodec codec_;
  KeyMap keys_;
  Env<T> env_;
  RunInfo info_;
  std::vector<NodeId> compute_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Watchdog::Slot[]> watch_;  // one per worker, for the phase's Watchdog
  BenchFault fault_;                         // test builds: DMRT_BENCH_FAULT
  std::unique_ptr<Client<T>> setup_;
  std::unique_ptr<BenchIndex<T>> index_;
  uint64_t expected_inserts_ = 0;
  IndexOptions io_;                          // what the index was made with (new_cache: attach)
  std::vector<RunPhase> phases_;             // the run phases: the command's, then --then's
  std::unique_ptr<InsertSequence> seq_;      // the records inserted so far, across run phases
  InsertLanes lanes_;                        // its numbers as records of the whole run
  std::unique_ptr<HistoryJournal> journal_;  // --verify --attach on shm: this process's part
  // --on-peer-loss continue: the group's verdicts, for lock waiters (Client::holder_dead).
  class GroupLiveness final : public Liveness {
   public:
    explicit GroupLiveness(const RunGroup& g) : g_(g) {}
    bool fenced_dead(uint32_t client) const override {
      return g_.is_dead(g_.slot_of_client(client));
    }
    static_assert(RunGroup::kMaxMembers < 255, "a process tag is 1 + a slot, in 8 bits");
    uint8_t process_tag(uint32_t client) const override {
      return static_cast<uint8_t>(1 + g_.slot_of_client(client));
    }
    bool tag_dead(uint8_t tag) const override { return tag != 0 && g_.is_dead(tag - 1u); }

   private:
    const RunGroup& g_;
  };
  std::unique_ptr<GroupLiveness> liveness_;
  AttachedRun* attached_ = nullptr;     // one compute process of several (shm --attach, verbs)
  std::atomic<bool> peer_lost_{false};  // the group lost a peer: the phase ends
  static constexpr double kLostGraceSeconds = 5;  // then workers still busy are not waited for
  uint64_t ops_ = 0;                              // this process's share of --ops
  ClockOffset clock_start_, clock_end_;           // this host's clock against the group's reference
  uint64_t clock_start_local_ns_ = 0, clock_end_local_ns_ = 0;  // before / after measuring
  uint32_t id_base_ = 0;                                        // first client id of this process
  std::vector<int> cpus_;                         // --cpus: thread t runs on cpus_[t % size]
  HistoryRecorder load_history_;                  // --verify: a bulk load's keys, as inserts
  std::optional<trace::TraceFile> tload_, trun_;  // --trace-load, --trace-run: measured, cut
  const Scheduler* sched_ = nullptr;              // the running phase's, for its stop flag
};

template <Transport T>
int run_bench(const RunRequest& r, const IndexMaker<T>& maker) {
  Bench<T> bench(r.opt, r.config, r.mix, maker);
  return bench.conclude(bench.run());
}

}  // namespace dmrt::bench
