// RunGroup: the protocol of bench/driver/group.h over GroupWords.
#include "bench/driver/group.h"

#include <algorithm>
#include <cstdlib>

namespace dmrt::bench {

using Clock = std::chrono::steady_clock;

RunGroup::RunGroup(std::unique_ptr<GroupWords> words, GroupSpec spec, Say say)
    : w_(std::move(words)), spec_(std::move(spec)), say_(std::move(say)) {
  if (spec_.members() > kMaxMembers)
    throw ConfigError("an experiment runs at most " + std::to_string(kMaxMembers) +
                      " compute processes (" + std::to_string(spec_.members()) + " given)");
  const auto now = Clock::now();
  members_seen_.assign(kMaxMembers, Seen{0, now});
  // A memory node is watched once its heartbeat has started: dmrt-node beats, a node served
  // inside this process (no process of its own to lose) never does.
  memory_seen_.assign(spec_.memory.size(), Seen{0, now});
  dead_.assign(kMaxMembers, false);
  slot_of_.assign(kMaxMembers, {-1, -1});
  for (unsigned r = 0; r < spec_.members(); ++r) slot_of_[r] = {static_cast<int>(r), 0};
  slot_ = spec_.rank;
  const std::vector<uint64_t> slots = read_slots();  // all 0 in a fresh group
  unsigned inc = 0;
  const unsigned last = current_slot(slots, spec_.rank, &inc);
  const uint64_t now_there = last < slots.size() ? slots[last] : 0;
  if (w_->load(kRunRound) == kRunDone)
    throw ConfigError(spec_.label +
                      " holds a run that has ended: start a fresh dmrt-node for the "
                      "next one");
  if (now_there == kFinished)
    throw ConfigError(node_name(spec_.rank) + " has finished its part of the run already");
  if (now_there == kDead) {
    replace(last, inc);
  } else if (last != spec_.rank) {
    throw ConfigError(node_name(spec_.rank) +
                      " is run by a live replacement already (incarnation " + std::to_string(inc) +
                      "): each compute process needs its own --node");
  } else {
    published_ = now_there;
    publish(false);
  }
  thread_ = std::thread([this] { beat(); });
}

std::vector<uint64_t> RunGroup::read_slots() {
  // One read from the replacement count through the slots of as many replacements as were last
  // seen (each poll of a barrier or a beat is a verb on verbs); again, longer, when more joined.
  constexpr unsigned kSkip = kHeartbeats - kReplacements;
  for (;;) {
    const unsigned extra = known_replacements_.load(std::memory_order_relaxed);
    std::vector<uint64_t> w(kSkip + spec_.members() + extra);
    w_->load_range(kReplacements, static_cast<unsigned>(w.size()), w.data());
    const uint64_t now = std::min<uint64_t>(w[0], kMaxMembers - spec_.members());
    if (now <= extra) return std::vector<uint64_t>(w.begin() + kSkip, w.end());
    known_replacements_.store(static_cast<unsigned>(now), std::memory_order_relaxed);
  }
}

std::vector<unsigned> RunGroup::chain(const std::vector<uint64_t>& words, unsigned r) {
  std::vector<unsigned> out{r};
  // A chain is at most kMaxMembers long: a longer one (a corrupt word) ends where it loops. Its
  // last slot may lie past `words` (a replacement that joined after they were read).
  while (out.back() < words.size() && replaced(words[out.back()]) && out.size() < kMaxMembers) {
    const unsigned next = static_cast<unsigned>(words[out.back()] & 0xffff);
    if (next < spec_.members() || next >= kMaxMembers) break;  // not a replacement's slot
    out.push_back(next);
    std::lock_guard<std::mutex> g(mu_);
    slot_of_[next] = {static_cast<int>(r), static_cast<int>(out.size() - 1)};
  }
  return out;
}

unsigned RunGroup::current_slot(const std::vector<uint64_t>& words, unsigned r,
                                unsigned* incarnation) {
  const std::vector<unsigned> c = chain(words, r);
  if (incarnation) *incarnation = static_cast<unsigned>(c.size() - 1);
  return c.back();
}

void RunGroup::replace(unsigned dead_slot, unsigned inc) {
  const std::string who = node_name(spec_.rank);
  if (!spec_.no_replacement.empty())
    throw ConfigError(who + " was declared dead; a replacement " + spec_.no_replacement);
  const uint64_t run = w_->load(kRunRound);
  if (run == 0)
    throw ConfigError(who + " was declared dead before the run phase began: a replacement " +
                      "joins a run phase under way only");
  if (run == kRunDone)
    throw ConfigError(who + " was declared dead, and the run it left has ended: nothing to " +
                      "rejoin (start a fresh dmrt-node for the next run)");
  const uint64_t taken = w_->faa(kReplacements, 1);
  if (spec_.members() + taken >= kMaxMembers)
    throw ConfigError("a run has at most " + std::to_string(kMaxMembers) +
                      " processes, replacements included: no slot is left for " + who);
  const unsigned mine = static_cast<unsigned>(spec_.members() + taken);
  {
    std::lock_guard<std::mutex> g(publish_mu_);
    barriers_ = run;  // it starts past the run phase's start barrier, as the others did
    published_ = barriers_ << kBarrierShift | (beats_ & kBeatMask);
    w_->store(kHeartbeats + mine, published_);
  }
  // The join point: one replacement per dead incarnation wins.
  if (w_->cas(kHeartbeats + dead_slot, kDead, kReplaced | mine) != kDead) {
    w_->store(kHeartbeats + mine, kDead);
    throw ConfigError("another process replaced " + who + " first");
  }
  // The creator stores kRunDone after the final barrier, then reads the words again: either it
  // sees this link and waits for this process, or this process sees kRunDone and unlinks.
  if (w_->load(kRunRound) == kRunDone) {
    w_->cas(kHeartbeats + dead_slot, kReplaced | mine, kDead);
    w_->store(kHeartbeats + mine, kDead);
    throw ConfigError(who + ": the run ended as this replacement joined it");
  }
  slot_ = mine;
  incarnation_ = inc + 1;
  {
    std::lock_guard<std::mutex> g(mu_);
    slot_of_[mine] = {static_cast<int>(spec_.rank), static_cast<int>(incarnation_)};
  }
  say("replaces " + who + ", declared dead, as its incarnation " + std::to_string(incarnation_) +
      ": joins the run phase under way");
}

void RunGroup::run_started() {
  std::lock_guard<std::mutex> g(publish_mu_);
  w_->store(kRunRound, barriers_);
}

void RunGroup::run_ended() {
  w_->store(kRunRound, kRunDone);
}

std::vector<RunGroup::Incarnation> RunGroup::incarnations() {
  const std::vector<uint64_t> words = read_slots();
  std::vector<Incarnation> out;
  for (unsigned r = 0; r < spec_.members(); ++r) {
    const std::vector<unsigned> c = chain(words, r);
    for (unsigned k = 0; k < c.size(); ++k) {
      const bool dead = k + 1 < c.size() || (c[k] < words.size() && words[c[k]] == kDead);
      out.push_back({r, k, c[k], dead});
    }
  }
  return out;
}

RunGroup::~RunGroup() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  try {
    w_->store(kHeartbeats + slot_, finished_ ? kFinished : kLeft);
  } catch (...) {  // the memory node is gone: nobody is left to tell
  }
}

std::string RunGroup::node_name(unsigned rank) const {
  return "compute node " + std::to_string(spec_.compute[rank]) + " (rank " + std::to_string(rank) +
         ")";
}

std::string RunGroup::slot_name(unsigned slot) const {
  std::pair<int, int> ri;
  {
    std::lock_guard<std::mutex> g(mu_);
    ri = slot < slot_of_.size() ? slot_of_[slot] : std::pair<int, int>{-1, -1};
  }
  if (ri.first < 0) return "the replacement in slot " + std::to_string(slot);
  return node_name(static_cast<unsigned>(ri.first)) +
         (ri.second > 0 ? " (incarnation " + std::to_string(ri.second) + ")" : "");
}

void RunGroup::begin_create() {
  const uint64_t me = (uint64_t{spec_.rank} + 1) << 2 | kCreatingTag;
  const uint64_t was = w_->cas(kState, 0, me);
  if (was == 0) return;
  std::string what = was == kReady    ? "already holds the index of an earlier run"
                     : was == kFailed ? "holds the remains of a run whose creator failed"
                                      : "is being set up by another creator";
  throw ConfigError(spec_.label + " " + what +
                    ": one memory node serves one run; start a fresh dmrt-node for the next one");
}

void RunGroup::ready(uint64_t fingerprint) {
  w_->store(kFingerprint, fingerprint);
  w_->store(kState, kReady);
}

void RunGroup::fail() {
  try {
    w_->store(kState, kFailed);
  } catch (...) {
  }
}

template <class Done>
void RunGroup::wait(std::chrono::microseconds max_pause, const Done& done) {
  const auto start = Clock::now();
  auto next_say = start + std::chrono::seconds(1);
  std::string why;
  auto pause = std::chrono::microseconds(200);
  while (!done(why)) {
    if (std::string l = lost(); !l.empty()) throw PeerLost(l);
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - start).count() > spec_.wait_seconds)
      throw ConfigError("gave up after " + std::to_string(static_cast<int>(spec_.wait_seconds)) +
                        " s waiting for " + why + " (--attach-wait-seconds)");
    if (now >= next_say) {  // after 1 s, then every 10 s: ten processes waiting stay readable
      say("waiting for " + why);
      next_say = now + std::chrono::seconds(10);
    }
    // Polling with backoff: across hosts nothing but the pool's words can wake a waiter. Each
    // poll is a verb the memory node's NIC serves (a software one: its CPU), so ten waiters
    // must stay cheap.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, max_pause);
  }
}

void RunGroup::await_ready(uint64_t fingerprint) {
  // A load takes seconds to minutes: 50 ms late is nothing.
  wait(std::chrono::milliseconds(50), [&](std::string& why) {
    const uint64_t s = w_->load(kState);
    if (s == kReady) return true;
    if (s == kFailed)
      throw ConfigError("the process that creates the index in " + spec_.label +
                        " failed (see its output)");
    why = s == 0 ? "the first compute node to create the index"
                 : node_name(static_cast<unsigned>((s >> 2) - 1)) + " to create and load the index";
    return false;
  });
  if (w_->load(kFingerprint) != fingerprint)
    throw ConfigError(
        "the index in " + spec_.label +
        " was built for another run: every compute process must be given the same --index, index "
        "flags, --keys, --value-size, --key-order, --keyset, --seed and workload (and one memory "
        "node serves one run: start a fresh dmrt-node for the next)");
}

uint32_t RunGroup::take_client_ids(uint32_t n) {
  ids_per_member_ = n;
  return slot_ * n;
}

void RunGroup::publish(bool count_beat) {
  std::lock_guard<std::mutex> g(publish_mu_);
  // A beat that read finished_ just before finish() ran must not overwrite kFinished: the
  // creator would wait for this process until --attach-wait-seconds.
  if (finished_) return;
  if (count_beat) ++beats_;
  const uint64_t word = barriers_ << kBarrierShift | (beats_ & kBeatMask);
  uint64_t prev = w_->cas(kHeartbeats + slot_, published_, word);
  if (prev == kDead || replaced(prev)) {  // a peer took this process for dead, and went on
    std::fprintf(stderr,
                 "dmrt-bench: a peer declared this process (%s) dead after its heartbeat "
                 "stopped for %.1f s (--peer-timeout-seconds); it must not go on\n",
                 slot_name(slot_).c_str(), spec_.peer_timeout);
    std::fflush(stderr);
    std::_Exit(3);
  }
  if (prev != published_) w_->store(kHeartbeats + slot_, word);  // not ours: a stale run's
  published_ = word;
}

void RunGroup::barrier(const std::string& before_what) {
  const unsigned members = spec_.members();
  uint64_t round = 0;
  {
    std::lock_guard<std::mutex> g(publish_mu_);
    if (barriers_ >= kMaxBarriers)
      throw ConfigError("a run passes at most " + std::to_string(kMaxBarriers) + " barriers");
    round = ++barriers_;
  }
  publish(false);
  // Every member is there once its word says it passed as many barriers, or it is done or dead.
  // At most 10 ms late: the phases that follow start within that of each other.
  wait(std::chrono::milliseconds(10), [&](std::string& why) {
    const std::vector<uint64_t> words = read_slots();
    note_declared_dead(words);
    unsigned there = 0;
    for (unsigned r = 0; r < members; ++r) {
      const unsigned s = current_slot(words, r);
      const uint64_t v = s < words.size() ? words[s] : 0;
      there += v == kDead || v == kFinished || (v >> 63 == 0 && v >> kBarrierShift >= round);
    }
    if (there == members) return true;
    if (w_->load(kState) == kFailed)
      throw ConfigError("the process that creates the index in " + spec_.label +
                        " failed (see its output)");
    why = std::to_string(there) + " of " + std::to_string(members) + " compute processes to " +
          before_what;
    return false;
  });
}

void RunGroup::finish() {
  std::lock_guard<std::mutex> g(publish_mu_);
  finished_ = true;
  w_->store(kHeartbeats + slot_, kFinished);
  published_ = kFinished;
}

std::vector<unsigned> RunGroup::dead() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<unsigned> out;
  for (unsigned r = 0; r < dead_.size(); ++r)
    if (dead_[r]) out.push_back(r);
  return out;
}

bool RunGroup::is_dead(unsigned slot) const {
  std::lock_guard<std::mutex> g(mu_);
  return slot < dead_.size() && dead_[slot];
}

void RunGroup::note_dead(unsigned s, const std::string& how) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (dead_[s]) return;
    dead_[s] = true;
  }
  say(slot_name(s) + " is dead: " + how + "; the run goes on without it");
}

void RunGroup::note_declared_dead(const std::vector<uint64_t>& words) {
  for (unsigned s = 0; s < words.size(); ++s)
    if (s != slot_ && (words[s] == kDead || replaced(words[s])))
      note_dead(s, "declared dead by a peer after its heartbeat stopped; fenced");
}

bool RunGroup::declare_dead(unsigned s, uint64_t stale) {
  int rank;
  {
    std::lock_guard<std::mutex> g(mu_);
    rank = slot_of_[s].first;
  }
  if (rank < 0 || !w_->fence(spec_.compute[static_cast<unsigned>(rank)])) return false;
  // Fenced: it writes nothing more. Its word may have moved since it was read (a last beat).
  uint64_t seen = stale;
  for (;;) {
    const uint64_t prev = w_->cas(kHeartbeats + s, seen, kDead);
    if (prev == seen || prev == kDead || replaced(prev)) break;
    if (prev == kFinished || prev == kLeft) return false;  // it ended on its own after all
    seen = prev;
  }
  note_dead(s, "its heartbeat stopped for " + std::to_string(static_cast<int>(spec_.peer_timeout)) +
                   " s (--peer-timeout-seconds); fenced");
  return true;
}

void RunGroup::await_all_done() {
  if (!finished_) finish();
  const auto give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(spec_.wait_seconds));
  try {
    for (;;) {
      // Each rank's last incarnation: a replacement that joined before run_ended() runs on.
      const std::vector<uint64_t> words = read_slots();
      note_declared_dead(words);
      bool all = true;
      for (unsigned r = 0; r < spec_.members() && all; ++r) {
        const unsigned s = current_slot(words, r);
        const uint64_t v = s < words.size() ? words[s] : 0;
        all = v == kFinished || v == kLeft || v == kDead;
      }
      if (all || !lost().empty() || Clock::now() > give_up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  } catch (const std::exception&) {  // the memory node is gone already
  }
}

std::string RunGroup::lost() const {
  std::lock_guard<std::mutex> g(mu_);
  return lost_;
}

void RunGroup::on_lost(std::function<void(const std::string&)> f) {
  std::lock_guard<std::mutex> g(mu_);
  on_lost_ = std::move(f);
}

void RunGroup::set_lost(const std::string& why, uint64_t code) {
  if (code != 0) {
    try {
      w_->cas(kLost, 0, code);
    } catch (...) {
    }
  }
  std::function<void(const std::string&)> f;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!lost_.empty()) return;
    lost_ = why;
    f = on_lost_;
  }
  say(why);
  if (f) f(why);
}

void RunGroup::beat() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, kBeat);
    if (stop_) break;
    lk.unlock();
    try {
      if (!finished_) publish(true);
      if (!finished_ && lost().empty()) check_peers(Clock::now());
    } catch (const std::exception& e) {
      set_lost(spec_.memory.empty() ? std::string("the group's memory node is lost: ") + e.what()
                                    : std::string("a memory node is lost: ") + e.what());
    }
    lk.lock();
  }
}

static std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

std::string RunGroup::lost_message(uint64_t code) const {
  if (code >= kMemoryStopped) {
    return "memory node " + std::to_string(code - kMemoryStopped) +
           " stopped serving (its dmrt-node exited)";
  }
  if (code >= kMemoryLost) {
    const uint64_t m = code - kMemoryLost;
    return "memory node " + std::to_string(m) + " is lost: its heartbeat stopped " +
           seconds_text(spec_.peer_timeout) + " s ago (--peer-timeout-seconds)";
  }
  return node_name(static_cast<unsigned>(code - 1)) + " is lost: its heartbeat stopped " +
         seconds_text(spec_.peer_timeout) + " s ago (--peer-timeout-seconds)";
}

void RunGroup::check_peers(Clock::time_point now) {
  // A peer another process found lost first: name it, not that process (which then leaves).
  if (const uint64_t code = w_->load(kLost); code != 0) {
    const bool known = code >= kMemoryLost || code - 1 < spec_.members();
    if (known) return set_lost(lost_message(code) + " (seen by a peer)");
  }
  const auto timeout = std::chrono::duration<double>(spec_.peer_timeout);
  auto stale = [&](Seen& s, uint64_t v) {
    if (v != s.value) {
      s = {v, now};
      return false;
    }
    return now - s.since > timeout;
  };
  const std::vector<uint64_t> beats = read_slots();
  note_declared_dead(beats);
  for (unsigned r = 0; r < spec_.members(); ++r) {
    const unsigned s = current_slot(beats, r);  // its last incarnation
    if (s == slot_ || s >= beats.size()) continue;
    const uint64_t v = beats[s];
    if (v == kLeft) return set_lost(slot_name(s) + " left the run on an error (see its output)");
    if (v == kDead) continue;        // a peer declared it (noted above)
    if (v == 0 || v == kFinished) {  // not started yet (the barrier bounds that), or done
      members_seen_[s] = {v, now};
      continue;
    }
    if (!stale(members_seen_[s], v)) continue;
    // Survivable: not the creator, which concludes the run, and only once it is fenced.
    if (survive_ && r != 0 && declare_dead(s, v)) continue;
    return set_lost(lost_message(r + 1), r + 1);
  }
  for (size_t i = 0; i < spec_.memory.size(); ++i) {
    const NodeId m = spec_.memory[i];
    const uint64_t v = w_->node_heartbeat(m);
    if (v == 0) continue;
    if (v == kLeft || v == kFinished)
      return set_lost(lost_message(kMemoryStopped + m), kMemoryStopped + m);
    if (stale(memory_seen_[i], v)) return set_lost(lost_message(kMemoryLost + m), kMemoryLost + m);
  }
}

}  // namespace dmrt::bench
