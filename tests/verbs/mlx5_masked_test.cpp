// The mlx5 masked-CAS WQE encoder and probe verdict, on any host (no RDMA device needed): field
// placement per the mlx5 send-queue format, and a model NIC that executes encoded WQEs must
// agree with the runtime's masked-CAS semantics.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dmrt/policies/verbs/mlx5_masked.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt {
namespace {

using namespace verbs::mlx5;

uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
uint64_t be64(const uint8_t* p) {
  return uint64_t{be32(p)} << 32 | be32(p + 4);
}

TEST(Mlx5MaskedCas, WqeFieldsAreWhereTheSendQueueFormatPutsThem) {
  MaskedCasArgs a;
  a.qpn = 0xabcdef;
  a.signaled = true;
  a.remote_addr = 0x1122334455667788ull;
  a.rkey = 0xcafe0001;
  a.compare = 0x0102030405060708ull;
  a.compare_mask = 0xff00ff00ff00ff00ull;
  a.swap = 0x0a0b0c0d0e0f1011ull;
  a.swap_mask = 0x00000000ffffffffull;
  a.local_addr = 0x7f0000001000ull;
  a.lkey = 0x42;
  uint8_t w[kMaskedCasWqeBytes];
  std::memset(w, 0xee, sizeof w);
  encode_masked_cas(a, w);
  EXPECT_EQ(w[0], kOpmodExtAtomic8);           // opmod: extended atomic, 8-byte operands
  EXPECT_EQ(be32(w) & 0x00ffff00u, 0u);        // WQE index: the driver's
  EXPECT_EQ(w[3], 0x14);                       // MLX5_OPCODE_ATOMIC_MASKED_CS
  EXPECT_EQ(be32(w + 4), 0xabcdefu << 8 | 5);  // QP number, 5 x 16 bytes
  EXPECT_EQ(w[8], 0);                          // signature: the driver's
  EXPECT_EQ(w[11], kCtrlCqUpdate);             // signaled
  EXPECT_EQ(be32(w + 12), 0u);                 // no immediate
  EXPECT_EQ(be64(w + 16), a.remote_addr);
  EXPECT_EQ(be32(w + 24), a.rkey);
  EXPECT_EQ(be32(w + 28), 0u);
  EXPECT_EQ(be64(w + 32), a.swap);
  EXPECT_EQ(be64(w + 40), a.compare);
  EXPECT_EQ(be64(w + 48), a.swap_mask);
  EXPECT_EQ(be64(w + 56), a.compare_mask);
  EXPECT_EQ(be32(w + 64), 8u);  // returned word: 8 bytes
  EXPECT_EQ(be32(w + 68), a.lkey);
  EXPECT_EQ(be64(w + 72), a.local_addr);
  a.signaled = false;
  encode_masked_cas(a, w);
  EXPECT_EQ(w[11], 0);  // unsignaled: no completion
}

// A model of the NIC side: decode the WQE, apply the extended atomic to `mem`, return old.
uint64_t execute(const uint8_t* w, uint64_t& mem) {
  EXPECT_EQ(w[3], kOpcodeMaskedCas);
  uint64_t swap = be64(w + 32), compare = be64(w + 40);
  uint64_t swap_mask = be64(w + 48), compare_mask = be64(w + 56);
  uint64_t old = mem;
  if (((old ^ compare) & compare_mask) == 0) mem = (old & ~swap_mask) | (swap & swap_mask);
  return old;
}

TEST(Mlx5MaskedCas, EncodedWqesExecuteTheRuntimesMaskedCasSemantics) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    MaskedCasArgs a;
    uint64_t mem = rng();
    a.compare = i % 2 ? mem ^ (rng() & rng()) : rng();
    a.compare_mask = rng() & rng();
    a.swap = rng();
    a.swap_mask = rng() | (uint64_t{1} << (i % 64));
    uint8_t w[kMaskedCasWqeBytes];
    encode_masked_cas(a, w);
    uint64_t before = mem;
    uint64_t old = execute(w, mem);
    ASSERT_EQ(old, before);
    uint64_t want = masked_cas_matches(before, a.compare, a.compare_mask)
                        ? masked_cas_result(before, a.swap, a.swap_mask)
                        : before;
    ASSERT_EQ(mem, want) << i;
  }
}

ProbeObservation observed(bool big_endian) {
  ProbeObservation o;
  o.completed = true;
  o.initial = kProbeWord;
  o.after_first = masked_cas_result(kProbeWord, kProbeSwap, kProbeMask);
  o.after_second = o.after_first;
  o.returned_first = big_endian ? __builtin_bswap64(o.initial) : o.initial;
  o.returned_second = big_endian ? __builtin_bswap64(o.after_first) : o.after_first;
  return o;
}

TEST(Mlx5MaskedCas, ProbeVerdictAcceptsOnlyMaskedSemantics) {
  ProbeVerdict v = judge(observed(false));
  EXPECT_TRUE(v.native);
  EXPECT_FALSE(v.reply_big_endian);
  v = judge(observed(true));
  EXPECT_TRUE(v.native);
  EXPECT_TRUE(v.reply_big_endian);

  ProbeObservation plain = observed(false);  // a NIC that ran it as a plain CAS: compare fails
  plain.after_first = plain.after_second = plain.initial;
  plain.returned_second = plain.initial;
  v = judge(plain);
  EXPECT_FALSE(v.native);
  EXPECT_NE(v.why.find("not masked"), std::string::npos) << v.why;

  ProbeObservation whole = observed(false);  // swap mask ignored: the whole word replaced
  whole.after_first = whole.after_second = kProbeSwap;
  EXPECT_FALSE(judge(whole).native);

  ProbeObservation leaky = observed(false);  // the failing compare still wrote
  leaky.after_second = leaky.initial;
  EXPECT_FALSE(judge(leaky).native);

  ProbeObservation garbage = observed(false);  // old word not returned in any known order
  garbage.returned_first = 0;
  EXPECT_FALSE(judge(garbage).native);

  ProbeObservation failed;
  failed.error = "completion \"remote invalid request error\"";
  v = judge(failed);
  EXPECT_FALSE(v.native);
  EXPECT_NE(v.why.find("remote invalid request"), std::string::npos);
}

}  // namespace
}  // namespace dmrt
