#include "dmrt/policies/sim/coherence.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/local_memory.h"

namespace dmrt::sim {

Coherence parse_coherence(std::string_view name) {
  for (Coherence c : {Coherence::kCoherent, Coherence::kNone, Coherence::kPartial})
    if (name == coherence_name(c)) return c;
  throw ConfigError("unknown sim coherence '" + std::string(name) +
                    "' (choices: coherent, none, partial)");
}

namespace {

constexpr uint64_t kLine = 64;

// Bytes [lo, hi) of a line as a dirty mask.
uint64_t byte_mask(uint64_t lo, uint64_t hi) {
  const uint64_t n = hi - lo;
  return (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << lo;
}

// Calls f(line address, first byte in the line, end byte in the line, offset in the verb) for
// each line [a, a + len) spans.
template <class F>
void for_each_line(uint64_t a, uint64_t len, F&& f) {
  if (len == 0) return;
  const uint64_t end = a + len;
  for (uint64_t line = a & ~(kLine - 1); line < end; line += kLine) {
    const uint64_t lo = std::max(a, line) - line;
    const uint64_t hi = std::min(end, line + kLine) - line;
    f(line, lo, hi, line + lo - a);
  }
}

}  // namespace

HostCaches::HostCaches(size_t hosts, uint64_t cache_bytes,
                       std::function<std::byte*(GlobalAddress)> line,
                       std::function<bool(GlobalAddress)> coherent)
    : line_(std::move(line)), coherent_(std::move(coherent)) {
  sets_ = std::bit_floor(std::max<uint64_t>(1, cache_bytes / kLine / kWays));
  lines_.resize(hosts * sets_ * kWays);
}

HostCaches::Line* HostCaches::find(NodeId host, uint64_t line_addr) {
  const uint64_t set = mix64(line_addr) & (sets_ - 1);
  Line* ways = &lines_[(host * sets_ + set) * kWays];
  for (unsigned w = 0; w < kWays; ++w)
    if (ways[w].tag == line_addr + 1) return &ways[w];
  return nullptr;
}

HostCaches::Line& HostCaches::fill(NodeId host, uint64_t line_addr) {
  if (Line* l = find(host, line_addr)) {
    l->used = ++clock_;
    return *l;
  }
  const uint64_t set = mix64(line_addr) & (sets_ - 1);
  Line* ways = &lines_[(host * sets_ + set) * kWays];
  Line* victim = &ways[0];
  for (unsigned w = 0; w < kWays && victim->tag != 0; ++w)
    if (ways[w].tag == 0 || ways[w].used < victim->used) victim = &ways[w];
  if (victim->tag != 0 && victim->dirty != 0) {
    ++counters.evicted_dirty;
    write_back(*victim);
  }
  victim->tag = line_addr + 1;
  victim->dirty = 0;
  victim->used = ++clock_;
  local::read(line_(GlobalAddress::from_raw(line_addr)), victim->data, kLine);
  return *victim;
}

void HostCaches::write_back(Line& l) {
  if (l.dirty == 0) return;
  std::byte* mem = line_(GlobalAddress::from_raw(l.tag - 1));
  // Runs of dirty bytes, so that the bytes the host never stored are left alone.
  uint64_t d = l.dirty;
  while (d != 0) {
    const unsigned lo = static_cast<unsigned>(std::countr_zero(d));
    const unsigned run = static_cast<unsigned>(std::countr_one(d >> lo));
    local::write(mem + lo, l.data + lo, run);
    d &= run == 64 ? 0 : ~byte_mask(lo, lo + run);
  }
  l.dirty = 0;
}

void HostCaches::drop(NodeId host, uint64_t line_addr) {
  if (Line* l = find(host, line_addr)) {
    write_back(*l);
    l->tag = 0;
  }
}

void HostCaches::read(NodeId host, const Verb& v) {
  auto* out = static_cast<std::byte*>(v.local);
  const bool invalidate = has_hint(v.hint, FlushHint::kInvalidate);
  for_each_line(v.remote.raw(), v.length,
                [&](uint64_t line, uint64_t lo, uint64_t hi, uint64_t at) {
                  const GlobalAddress la = GlobalAddress::from_raw(line);
                  if (coherent_(la)) {
                    local::read(line_(la) + lo, out + at, hi - lo);
                    return;
                  }
                  if (invalidate) drop(host, line);
                  const bool hit = find(host, line) != nullptr;
                  Line& l = fill(host, line);
                  if (hit) {
                    // Stale: a byte the host did not write itself differs from memory.
                    std::byte mem[kLine];
                    local::read(line_(la), mem, kLine);
                    for (uint64_t i = lo; i < hi; ++i)
                      if (!((l.dirty >> i) & 1) && l.data[i] != mem[i]) {
                        ++counters.stale_lines;
                        break;
                      }
                  }
                  std::memcpy(out + at, l.data + lo, hi - lo);
                });
}

void HostCaches::write(NodeId host, const Verb& v) {
  const auto* in = static_cast<const std::byte*>(v.local);
  const bool back = has_hint(v.hint, FlushHint::kWriteBack);
  // A release's lock word is stored at memory after the rest (the class comment).
  uint64_t lock_at = ~uint64_t{0};
  if (v.lock == LockWord::kLast) lock_at = v.remote.raw() + v.length - 8;
  if (v.lock == LockWord::kFirst) lock_at = v.remote.raw();
  const uint64_t a = v.remote.raw();
  for_each_line(a, v.length, [&](uint64_t line, uint64_t lo, uint64_t hi, uint64_t at) {
    const GlobalAddress la = GlobalAddress::from_raw(line);
    // The lock word's bytes are left out of the cached store.
    uint64_t skip_lo = hi, skip_hi = hi;
    if (lock_at >= line && lock_at < line + kLine) skip_lo = lock_at - line, skip_hi = skip_lo + 8;
    auto store = [&](uint64_t from, uint64_t to) {
      if (from >= to) return;
      if (coherent_(la)) {
        local::write(line_(la) + from, in + at + (from - lo), to - from);
        return;
      }
      Line& l = fill(host, line);
      std::memcpy(l.data + from, in + at + (from - lo), to - from);
      l.dirty |= byte_mask(from, to);
      if (back) write_back(l);
    };
    store(lo, std::min(hi, skip_lo));
    store(std::max(lo, skip_hi), hi);
  });
  if (lock_at != ~uint64_t{0}) {
    const GlobalAddress word = GlobalAddress::from_raw(lock_at);
    const uint64_t line = lock_at & ~(kLine - 1);
    const std::byte* src = in + (lock_at - a);
    local::write(line_(GlobalAddress::from_raw(line)) + (lock_at - line), src, 8);
    // The host's own copy holds what it stored (clean: memory holds it too).
    if (!coherent_(word))
      if (Line* l = find(host, line)) std::memcpy(l->data + (lock_at - line), src, 8);
  }
}

std::pair<uint64_t, uint64_t> HostCaches::hinted_lines(const Verb& v) const {
  const bool inval = v.kind == VerbKind::kRead && has_hint(v.hint, FlushHint::kInvalidate);
  const bool back = v.kind == VerbKind::kWrite && has_hint(v.hint, FlushHint::kWriteBack);
  if (!inval && !back) return {0, 0};
  uint64_t n = 0;
  for_each_line(v.remote.raw(), v.length, [&](uint64_t line, uint64_t, uint64_t, uint64_t) {
    if (!coherent_(GlobalAddress::from_raw(line))) ++n;
  });
  return {inval ? n : 0, back ? n : 0};
}

}  // namespace dmrt::sim
