// Numeric flags of the tools (tools/common/cli_numbers.h): negative counts, NaN, infinities and
// overflow refused with the flag and its range, exact integers in scientific notation read, on the
// command line and from --config alike.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dmrt/runtime/service_registry.h"
#include "tools/common/cli_config.h"
#include "tools/common/cli_numbers.h"

namespace dmrt::cli_numbers_test {
namespace {

using tools::check_number;
using tools::NumberKind;

TEST(CliNumbers, IntegersAreReadExactly) {
  struct Case {
    const char* in;
    NumberKind kind;
    const char* out;  // canonical text, or null when refused
    const char* why;  // the refusal's words
  };
  const NumberKind U = NumberKind::kUnsigned, S = NumberKind::kSigned;
  for (const Case& c : std::vector<Case>{
           {"42", U, "42", ""},
           {"+42", U, "42", ""},
           {"007", U, "7", ""},  // decimal, not CLI11's octal
           {"0x1f", U, "31", ""},
           {"1e6", U, "1000000", ""},
           {"2.5e7", U, "25000000", ""},
           {"1E12", U, "1000000000000", ""},
           {"1.0", U, "1", ""},
           {"-0", U, "0", ""},
           {"0e999999999", U, "0", ""},
           {"18446744073709551615", U, "18446744073709551615", ""},
           {"-9223372036854775808", S, "-9223372036854775808", ""},
           {"-5", S, "-5", ""},
       }) {
    const auto r = check_number(c.in, c.kind);
    EXPECT_EQ(r.error, "") << c.in;
    EXPECT_EQ(r.text, c.out) << c.in;
  }
  for (const Case& c : std::vector<Case>{
           {"-5", U, nullptr, "is negative"},
           {"-1", U, nullptr, "is negative"},
           {"1.5", U, nullptr, "is not a whole number"},
           {"1500e-3", U, nullptr, "is not a whole number"},
           {"1e-1", U, nullptr, "is not a whole number"},
           {"18446744073709551616", U, nullptr, "is too large"},
           {"99999999999999999999999", U, nullptr, "is too large"},
           {"1e20", U, nullptr, "is too large"},
           {"1e400", U, nullptr, "is too large"},
           {"0x10000000000000000", U, nullptr, "is too large"},
           {"9223372036854775808", S, nullptr, "is too large"},
           {"-9223372036854775809", S, nullptr, "is too small"},
           {"nan", U, nullptr, "is not a number"},
           {"inf", S, nullptr, "is not a number"},
           {"", U, nullptr, "is not a number"},
           {" 5", U, nullptr, "is not a number"},
           {"5 ", U, nullptr, "is not a number"},
           {"1_000", U, nullptr, "is not a number"},
           {"1e", U, nullptr, "is not a number"},
           {"e5", U, nullptr, "is not a number"},
           {"--5", S, nullptr, "is not a number"},
       }) {
    const auto r = check_number(c.in, c.kind);
    EXPECT_NE(r.error.find(c.why), std::string::npos) << c.in << " -> " << r.error;
  }
}

TEST(CliNumbers, FloatsAreFinite) {
  for (const char* ok : {"0.99", "1e-6", "1e7", "+3", "-2.5", "0", ".5", "5."})
    EXPECT_EQ(check_number(ok, NumberKind::kFloat).error, "") << ok;
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+INF"})
    EXPECT_NE(check_number(bad, NumberKind::kFloat).error.find("is not a finite number"),
              std::string::npos)
        << bad;
  for (const char* big : {"1e400", "-1e400", "1e-400"})
    EXPECT_NE(check_number(big, NumberKind::kFloat).error.find("out of the range"),
              std::string::npos)
        << big;
  for (const char* bad : {"0x1p3", "1,5", "", "1e+", "abc"})
    EXPECT_NE(check_number(bad, NumberKind::kFloat).error.find("is not a number"),
              std::string::npos)
        << bad;
}

// An app with flags of each kind, as the tools declare them.
struct Flags {
  CLI::App app{"numbers"};
  uint64_t ops = 1, plain = 0;
  unsigned threads = 1;
  int node = -1, mtu = 0;
  unsigned clients = 1, root_slot = 12;
  double theta = 0.99, gbps = 0;
  std::vector<uint64_t> keys;
  std::string write_config;

  Flags() {
    app.add_option("--ops", ops)->check(CLI::Range(uint64_t{1}, ~uint64_t{0}));
    app.add_option("--plain", plain);
    app.add_option("--threads", threads)->check(CLI::Range(1u, 1024u));
    app.add_option("--node", node)->check(CLI::Range(0, 65535));
    app.add_option("--zipf-theta", theta)->check(CLI::Range(0.01, 0.9999));
    app.add_option("--mtu", mtu)->check(CLI::IsMember({0, 256, 4096}));
    app.add_option("--clients", clients)->check(CLI::PositiveNumber);
    auto* group = app.add_option_group("shm");
    group->add_option("--shm-gbps", gbps)->check(CLI::NonNegativeNumber);
    // A service's flag: its range checked by a lambda described as CLI::Range would be.
    add_ranged_flag(*app.add_option_group("rolex"), "--root-slot", root_slot, "", 0, 63);
    app.add_option("--key", keys);
    tools::add_config_flags(app, write_config);
    tools::strict_numbers(app);
  }
  // "" when the arguments parse, else CLI11's message.
  std::string parse(std::vector<std::string> args) {
    args.insert(args.begin(), "numbers");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(CliNumbers, FlagsRefuseWithTheirNameAndRange) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--ops", "-5"},
            "--ops: -5 is negative: give a whole number from 1 to 18446744073709551615"},
           {{"--ops", "18446744073709551616"}, "--ops: 18446744073709551616 is too large"},
           {{"--plain", "-1"},
            "--plain: -1 is negative: give a whole number from 0 to 18446744073709551615"},
           {{"--threads", "2.5"},
            "--threads: 2.5 is not a whole number: give a whole number from 1 to 1024"},
           {{"--threads", "-3"}, "--threads: -3 is negative: give a whole number from 1 to 1024"},
           // Past the range: the range's check says so in the same words, not CLI11's.
           {{"--threads", "1e4"},
            "--threads: 10000 is out of range: give a whole number from 1 to 1024"},
           {{"--threads", "0"}, "--threads: 0 is out of range: give a whole number from 1 to 1024"},
           {{"--node", "-1"}, "--node: -1 is out of range: give a whole number from 0 to 65535"},
           {{"--zipf-theta", "0.99991"},
            "--zipf-theta: 0.99991 is out of range: give a number from 0.01 to 0.9999"},
           {{"--mtu", "300"}, "--mtu: 300 is not allowed: give one of 0, 256, 4096"},
           {{"--mtu", "4294967296"}, "--mtu: 4294967296 is not allowed: give one of 0, 256, 4096"},
           {{"--clients", "0"}, "--clients: 0 is out of range: give a whole number greater than 0"},
           {{"--shm-gbps", "-0.5"},
            "--shm-gbps: -0.5 is out of range: give a number of at least 0"},
           {{"--root-slot", "64"},
            "--root-slot: 64 is out of range: give a whole number from 0 to 63"},
           {{"--root-slot", "-1"}, "--root-slot: -1 is negative: give a whole number from 0 to 63"},
           {{"--node", "1e9999"}, "--node: 1e9999 is too large"},
           {{"--zipf-theta", "nan"},
            "--zipf-theta: nan is not a finite number: give a number from 0.01 to 0.9999"},
           {{"--zipf-theta", "inf"}, "--zipf-theta: inf is not a finite number"},
           {{"--shm-gbps=-inf"},
            "--shm-gbps: -inf is not a finite number: give a number of at least 0"},
           {{"--key", "1", "--key", "-2"}, "--key: -2 is negative"},
       }) {
    Flags f;
    const std::string err = f.parse(c.args);
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args[0] << " ...: " << err;
  }
}

TEST(CliNumbers, ScientificIntegersAreRead) {
  Flags f;
  ASSERT_EQ(f.parse({"--ops", "2.5e7", "--threads", "1e3", "--node", "-0", "--key", "1e12"}), "");
  EXPECT_EQ(f.ops, 25'000'000u);
  EXPECT_EQ(f.threads, 1000u);
  EXPECT_EQ(f.node, 0);
  ASSERT_EQ(f.keys.size(), 1u);
  EXPECT_EQ(f.keys[0], 1'000'000'000'000u);
}

// --config values pass the same check: TOML's -5, nan and inf included.
TEST(CliNumbers, ConfigValuesAreCheckedToo) {
  const std::string path = ::testing::TempDir() + "dmrt_cli_numbers.toml";
  struct Case {
    const char* toml;
    const char* says;  // null: accepted
  };
  for (const Case& c : std::vector<Case>{
           {"ops = -5\n", "--ops: -5 is negative"},
           {"zipf-theta = nan\n", "--zipf-theta: nan is not a finite number"},
           {"shm-gbps = inf\n", "--shm-gbps: inf is not a finite number"},
           {"ops = 1.5\n", "--ops: 1.5 is not a whole number"},
           {"ops = 99999999999999999999\n", "--config: line 1"},  // past TOML's 64-bit integers
           {"ops = 1e6\n", nullptr},
           {"ops = 1_000_000\n", nullptr},
       }) {
    { std::ofstream(path, std::ios::trunc) << c.toml; }
    Flags f;
    const std::string err = f.parse({"--config", path});
    if (!c.says) {
      EXPECT_EQ(err, "") << c.toml;
      EXPECT_EQ(f.ops, 1'000'000u) << c.toml;
    } else {
      EXPECT_NE(err.find(c.says), std::string::npos) << c.toml << ": " << err;
    }
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dmrt::cli_numbers_test
