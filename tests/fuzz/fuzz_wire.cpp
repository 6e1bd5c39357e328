// Fuzz target for the verbs bootstrap's wire parser (policies/verbs/wire.h): any byte string is
// either parsed or refused with TransportError, never read out of bounds, and what parses
// re-encodes to the same bytes. The first input byte picks the message; the rest is its body
// behind a valid header, so the parsers are reached (byte 0 >= 4: the raw bytes are a whole
// frame, header included).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "policies/verbs/wire.h"
#include "runtime/error.h"

namespace {

using namespace dmrt::verbs::wire;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_wire: %s\n", what);
  std::abort();
}

template <class T, class Parse>
void round_trip(Type t, const std::vector<uint8_t>& frame, Parse parse) {
  T v;
  try {
    Reader r(frame, "fuzz");
    if (r.type() != t) return;
    v = parse(r);
  } catch (const dmrt::TransportError&) {
    return;  // refused with a clear error: fine
  }
  Writer w(t);
  write(w, v);
  if (w.data() != frame) fail("parsed message does not re-encode to its bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t pick = data[0];
  std::vector<uint8_t> frame;
  if (pick < 4) {
    static const Type types[] = {Type::kHello, Type::kConnect, Type::kBarrier, Type::kError};
    frame = Writer(types[pick]).data();
  }
  frame.insert(frame.end(), data + 1, data + size);
  round_trip<Hello>(Type::kHello, frame, [](Reader& r) { return parse_hello(r); });
  round_trip<ConnectRequest>(Type::kConnect, frame, [](Reader& r) { return parse_connect(r, 64); });
  round_trip<BarrierRequest>(Type::kBarrier, frame, [](Reader& r) { return parse_barrier(r); });
  try {  // the generic accessors: a string or QP read past the end is an error, not a read
    Reader r(frame, "fuzz");
    (void)r.str();
    (void)r.qp();
    r.expect_end();
  } catch (const dmrt::TransportError&) {
  }
  return 0;
}
