// Fuzz target for the verbs bootstrap's wire parser (dmrt/policies/verbs/wire.h): any byte string
// is either parsed or refused with TransportError, never read out of bounds, and what parses
// re-encodes to the same bytes. The first input byte picks the mode: 0-3 and 64-65, the rest is a
// message body behind a valid header (so the parsers are reached); 4-63, the rest seeds a
// well-formed message that must parse back and whose prefixes must be refused; always, the raw
// bytes are also tried as a whole frame, header included.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/policies/verbs/wire.h"
#include "dmrt/runtime/error.h"

namespace {

using namespace dmrt::verbs::wire;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_wire: %s\n", what);
  std::abort();
}

// `well_formed`: the frame was built by the writer, so it must parse.
template <class T, class Parse>
void round_trip(Type t, const std::vector<uint8_t>& frame, Parse parse, bool well_formed = false) {
  T v;
  try {
    Reader r(frame, "fuzz");
    if (r.type() != t) return;
    v = parse(r);
  } catch (const dmrt::TransportError&) {
    if (well_formed) fail("a well-formed message was refused");
    return;  // refused with a clear error: fine
  }
  Writer w(t);
  write(w, v);
  if (w.data() != frame) fail("parsed message does not re-encode to its bytes");
}

// What an input's first byte picks (the file's comment): a well-formed message of a type, a body
// behind a valid header of a type, or raw bytes alone.
enum class Mode { kStructured, kBody, kRaw };
struct Pick {
  Mode mode;
  Type type;  // kStructured, kBody: the message's type
};
constexpr Type kStructuredTypes[] = {Type::kHello, Type::kConnect, Type::kBarrier, Type::kClock,
                                     Type::kClockOk};
constexpr Type kBodyTypes[] = {Type::kHello, Type::kConnect, Type::kBarrier,
                               Type::kError, Type::kClock,   Type::kClockOk};  // 0-3, 64-65

Pick pick_of(uint8_t first) {
  if (first >= 4 && first < 64) return {Mode::kStructured, kStructuredTypes[first % 5]};
  if (first < 4) return {Mode::kBody, kBodyTypes[first]};
  if (first < 66) return {Mode::kBody, kBodyTypes[first - 60]};
  return {Mode::kRaw, Type::kError};
}

const char* type_name(Type t) {
  switch (t) {
    case Type::kHello:
      return "HELLO";
    case Type::kConnect:
      return "CONNECT";
    case Type::kBarrier:
      return "BARRIER";
    case Type::kError:
      return "ERROR";
    case Type::kClock:
      return "CLOCK";
    case Type::kClockOk:
      return "CLOCK_OK";
    default:
      return "other";
  }
}

// Byte source for structured messages: the input's bytes, then zeros.
struct Bytes {
  const uint8_t* p;
  size_t n;
  uint64_t take(int k) {
    uint64_t v = 0;
    for (int i = 0; i < k; ++i) {
      v = v << 8 | (n ? *p : 0);
      if (n) ++p, --n;
    }
    return v;
  }
};

// A well-formed message built from the input: it parses back to the same fields, and every strict
// prefix of it is refused (the layouts are self-delimiting).
void structured(Type t, Bytes in) {
  Writer w(t);
  if (t == Type::kHello) {
    Hello h;
    h.auth = in.take(1) & 1;
    for (uint8_t& b : h.nonce) b = static_cast<uint8_t>(in.take(1));
    h.generation = in.take(8);
    write(w, h);
  } else if (t == Type::kConnect) {
    ConnectRequest c;
    c.from = static_cast<uint16_t>(in.take(2));
    c.target = static_cast<uint16_t>(in.take(2));
    c.nodes = static_cast<uint16_t>(in.take(2));
    c.region_bytes = in.take(8);
    c.mailboxes = static_cast<uint32_t>(in.take(4));
    c.slots = static_cast<uint32_t>(in.take(4));
    c.slot_bytes = static_cast<uint32_t>(in.take(4));
    for (uint64_t i = in.take(1) % 8; i > 0; --i) {
      QpInfo q;
      q.qpn = static_cast<uint32_t>(in.take(4));
      q.psn = static_cast<uint32_t>(in.take(4));
      q.lid = static_cast<uint16_t>(in.take(2));
      q.mtu = static_cast<uint8_t>(in.take(1));
      for (uint8_t& b : q.gid) b = static_cast<uint8_t>(in.take(1));
      c.qps.push_back(q);
    }
    for (uint64_t i = in.take(1) % 4; i > 0; --i)
      c.replaced.push_back(static_cast<uint32_t>(in.take(4)));
    write(w, c);
  } else if (t == Type::kClock) {
    ClockRequest c;
    c.generation = in.take(8);
    c.seq = static_cast<uint32_t>(in.take(4));
    c.from = static_cast<uint16_t>(in.take(2));
    write(w, c);
  } else if (t == Type::kClockOk) {
    ClockAnswer a;
    a.seq = static_cast<uint32_t>(in.take(4));
    a.now_ns = in.take(8);
    a.resolution_ns = in.take(8);
    write(w, a);
  } else {
    BarrierRequest b;
    b.generation = in.take(8);
    b.id = in.take(8);
    b.parties = static_cast<uint32_t>(in.take(4));
    b.from = static_cast<uint16_t>(in.take(2));
    write(w, b);
  }
  const std::vector<uint8_t>& full = w.data();
  round_trip<Hello>(
      Type::kHello, full, [](Reader& r) { return parse_hello(r); }, true);
  round_trip<ConnectRequest>(
      Type::kConnect, full, [](Reader& r) { return parse_connect(r, 64); }, true);
  round_trip<BarrierRequest>(
      Type::kBarrier, full, [](Reader& r) { return parse_barrier(r); }, true);
  round_trip<ClockRequest>(
      Type::kClock, full, [](Reader& r) { return parse_clock(r); }, true);
  round_trip<ClockAnswer>(
      Type::kClockOk, full, [](Reader& r) { return parse_clock_answer(r); }, true);
  for (size_t cut = 8; cut < full.size(); cut += 1 + full.size() / 16) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<long>(cut));
    try {
      Reader r(prefix, "fuzz");
      if (t == Type::kHello) (void)parse_hello(r);
      if (t == Type::kConnect) (void)parse_connect(r, 64);
      if (t == Type::kBarrier) (void)parse_barrier(r);
      if (t == Type::kClock) (void)parse_clock(r);
      if (t == Type::kClockOk) (void)parse_clock_answer(r);
      fail("a truncated message parsed");
    } catch (const dmrt::TransportError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Pick pick = pick_of(data[0]);
  if (pick.mode == Mode::kStructured) structured(pick.type, Bytes{data + 1, size - 1});
  std::vector<uint8_t> frame;
  if (pick.mode == Mode::kBody) frame = Writer(pick.type).data();
  frame.insert(frame.end(), data + 1, data + size);
  round_trip<Hello>(Type::kHello, frame, [](Reader& r) { return parse_hello(r); });
  round_trip<ConnectRequest>(Type::kConnect, frame, [](Reader& r) { return parse_connect(r, 64); });
  round_trip<BarrierRequest>(Type::kBarrier, frame, [](Reader& r) { return parse_barrier(r); });
  round_trip<ClockRequest>(Type::kClock, frame, [](Reader& r) { return parse_clock(r); });
  round_trip<ClockAnswer>(Type::kClockOk, frame, [](Reader& r) { return parse_clock_answer(r); });
  try {  // the generic accessors: a string or QP read past the end is an error, not a read
    Reader r(frame, "fuzz");
    (void)r.str();
    (void)r.qp();
    r.expect_end();
  } catch (const dmrt::TransportError&) {
  }
  return 0;
}

// The class of an input, as LLVMFuzzerTestOneInput dispatches it: the replay counts one case per
// class (tests/fuzz/replay_main.cpp).
extern "C" const char* DmrtFuzzInputClass(const uint8_t* data, size_t size) {
  if (size < 1) return "empty input";
  const Pick pick = pick_of(data[0]);
  static std::map<std::pair<Mode, Type>, std::string> names;  // stable c_str()s
  std::string& name = names[{pick.mode, pick.type}];
  if (name.empty()) {
    if (pick.mode == Mode::kStructured)
      name = std::string("well-formed ") + type_name(pick.type) + " and its prefixes";
    else if (pick.mode == Mode::kBody)
      name = std::string(type_name(pick.type)) + " body behind a valid header";
    else
      name = "raw bytes as a frame";
  }
  return name.c_str();
}
