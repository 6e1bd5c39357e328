// Strict numbers for the tools' CLI11 flags: one check, installed on every numeric option of an
// app, that refuses what CLI11 2.1 would wrap or let through (a negative count, NaN, a number
// past its type) and reads an exact integer written in scientific notation (--keys 1e9).
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace dmrt::tools {

enum class NumberKind { kUnsigned, kSigned, kFloat };

// A number's text checked: `text` is what CLI11 then converts (an integer in plain decimal),
// `error` a sentence saying what is wrong ("" when fine).
struct NumberText {
  std::string text;
  std::string error;
};

namespace detail {

inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// [+-]digits[.digits][(e|E)[+-]digits], with a digit somewhere before the exponent: the only
// shapes accepted (no hex floats, no "inf", no "nan", no spaces, no "1_000").
struct Decimal {
  bool negative = false;
  std::string digits;   // integer and fraction digits together
  size_t fraction = 0;  // how many of `digits` are after the point
  long exponent = 0;
};

inline bool split_decimal(std::string_view s, Decimal& d) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) d.negative = s[i++] == '-';
  bool point = false;
  for (; i < s.size() && (is_digit(s[i]) || (s[i] == '.' && !point)); ++i) {
    if (s[i] == '.') {
      point = true;
      continue;
    }
    d.digits += s[i];
    if (point) ++d.fraction;
  }
  if (d.digits.empty()) return false;
  if (i == s.size()) return true;
  if (s[i] != 'e' && s[i] != 'E') return false;
  ++i;
  bool neg_exp = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg_exp = s[i++] == '-';
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) return false;
    // Past 10^6 every exponent means the same: zero or an overflow.
    if (d.exponent < 1'000'000) d.exponent = d.exponent * 10 + (s[i] - '0');
  }
  if (neg_exp) d.exponent = -d.exponent;
  return true;
}

// The decimal's exact integer value as digits (no leading zeros, "0" for zero), or an error.
inline std::string integer_digits(const Decimal& d, std::string& error) {
  std::string digits = d.digits;
  long shift = d.exponent - static_cast<long>(d.fraction);
  const size_t nonzero = digits.find_first_not_of('0');
  if (nonzero == std::string::npos) return "0";
  if (shift < 0) {
    // The digits the shift drops must all be zeros.
    const auto drop = static_cast<size_t>(-shift);
    if (drop >= digits.size() ||
        digits.find_first_not_of('0', digits.size() - drop) != std::string::npos) {
      error = "is not a whole number";
      return {};
    }
    digits.resize(digits.size() - drop);
  } else if (shift > 40) {
    error = "is too large";
    return {};
  } else {
    digits.append(static_cast<size_t>(shift), '0');
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  return digits;
}

inline NumberText check_integer(const std::string& s, bool is_signed) {
  NumberText r;
  const std::string_view v(s);
  uint64_t magnitude = 0;
  bool negative = false;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    // Hexadecimal (seeds, masks): CLI11 read it so before; only plain hex digits.
    auto [end, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), magnitude, 16);
    if (end != v.data() + v.size()) return {{}, "is not a number"};
    if (ec == std::errc::result_out_of_range) return {{}, "is too large"};
  } else {
    Decimal d;
    if (!split_decimal(v, d)) return {{}, "is not a number"};
    negative = d.negative;
    const std::string digits = integer_digits(d, r.error);
    if (!r.error.empty()) return r;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (ec == std::errc::result_out_of_range) return {{}, "is too large"};
    if (end != digits.data() + digits.size()) return {{}, "is not a number"};
  }
  if (magnitude == 0) return {"0", ""};
  if (negative && !is_signed) return {{}, "is negative"};
  if (is_signed) {
    const uint64_t most = uint64_t{std::numeric_limits<int64_t>::max()} + (negative ? 1 : 0);
    if (magnitude > most) return {{}, negative ? "is too small" : "is too large"};
  }
  r.text = (negative ? "-" : "") + std::to_string(magnitude);
  return r;
}

inline NumberText check_float(const std::string& s) {
  Decimal d;
  if (!split_decimal(s, d)) {
    std::string lower;
    for (char c : s) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos)
      return {{}, "is not a finite number"};
    return {{}, "is not a number"};
  }
  double v = 0;
  const char* b = s.data() + (s[0] == '+' ? 1 : 0);  // from_chars takes no '+'
  auto [end, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (end != s.data() + s.size()) return {{}, "is not a number"};
  // Past a double's range either way (1e400, 1e-400): not silently infinity or zero.
  if (ec == std::errc::result_out_of_range) return {{}, "is out of the range of a number"};
  return {s, ""};
}

// The values one validator allows, in words ("a whole number from 1 to 1024", "one of 0, 256"),
// read from its description (CLI::Range writes "UINT in [1 - 1024]", CLI::IsMember "{0,256}");
// "" when the description states none.
inline std::string allowed_words(const std::string& desc, NumberKind kind) {
  const std::string what = kind == NumberKind::kFloat ? "a number" : "a whole number";
  const size_t open = desc.find(" in [");
  const size_t close = desc.rfind(']');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    std::string inner = desc.substr(open + 5, close - open - 5);
    for (const char* sep : {" - ", " to "})
      if (size_t m = inner.find(sep); m != std::string::npos)
        return what + " from " + inner.substr(0, m) + " to " + inner.substr(m + std::strlen(sep));
  }
  if (desc == "POSITIVE") return what + " greater than 0";
  if (desc == "NONNEGATIVE") return what + " of at least 0";
  if (desc.size() > 2 && desc.front() == '{' && desc.back() == '}') {
    std::string items = desc.substr(1, desc.size() - 2);
    for (size_t c = items.find(','); c != std::string::npos; c = items.find(',', c + 2))
      items.insert(c + 1, " ");
    return "one of " + items;
  }
  return "";
}

// The range an option's validators allow, in words: the first one that states a range, else the
// range of its kind.
inline std::string range_words(const CLI::Option& opt, NumberKind kind) {
  const std::string full = opt.get_type_name();
  for (size_t at = full.find(':'); at != std::string::npos; at = full.find(':', at + 1)) {
    const std::string words =
        allowed_words(full.substr(at + 1, full.find(':', at + 1) - at - 1), kind);
    if (!words.empty()) return words;
  }
  const std::string what = kind == NumberKind::kFloat ? "a number" : "a whole number";
  switch (kind) {
    case NumberKind::kUnsigned:
      return what + " from 0 to " + std::to_string(std::numeric_limits<uint64_t>::max());
    case NumberKind::kSigned:
      return what + " from " + std::to_string(std::numeric_limits<int64_t>::min()) + " to " +
             std::to_string(std::numeric_limits<int64_t>::max());
    default:
      return "a finite number";
  }
}

// The option's validator `i`, or null past the last (CLI11 2.1 throws there, and says no count).
inline CLI::Validator* validator_at(CLI::Option& opt, int i) {
  try {
    return opt.get_validator(i);
  } catch (const CLI::OptionNotFound&) {
    return nullptr;
  }
}

inline bool numeric_kind(const CLI::Option& opt, NumberKind& kind) {
  const std::string full = opt.get_type_name();
  const std::string base = full.substr(0, full.find(':'));
  if (base == "UINT")
    kind = NumberKind::kUnsigned;
  else if (base == "INT")
    kind = NumberKind::kSigned;
  else if (base == "FLOAT")
    kind = NumberKind::kFloat;
  else
    return false;
  return true;
}

}  // namespace detail

// Checks `text` as a number of `kind` (the function every numeric flag's value goes through).
inline NumberText check_number(const std::string& text, NumberKind kind) {
  return kind == NumberKind::kFloat ? detail::check_float(text)
                                    : detail::check_integer(text, kind == NumberKind::kSigned);
}

// Installs check_number, ahead of every other check, on each numeric option of `app` and of its
// option groups (CLI11 names their types UINT, INT and FLOAT), so that command-line and --config
// values alike pass it before CLI::Range and CLI11's own conversion (which would take "-5" for
// 2^64 - 5); and makes each check that states a range (CLI::Range, CLI::IsMember, a lambda
// described as "UINT in [0 - 63]") refuse in the same words, not CLI11's ("Value 10000 not in
// range 1 to 1024"). Call it once every option is added. Errors read "--ops: -5 is negative: give
// a whole number from 1 to 18446744073709551615", "--threads: 10000 is out of range: give a whole
// number from 1 to 1024". A flag narrower than 64 bits needs a range check of its own: CLI11
// alone would refuse 2^32 in a uint32_t with "Could not convert".
inline void strict_numbers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    NumberKind kind = NumberKind::kUnsigned;
    if (!detail::numeric_kind(*opt, kind)) continue;
    const std::string range = detail::range_words(*opt, kind);
    for (int i = 0; CLI::Validator* v = detail::validator_at(*opt, i); ++i) {
      const std::string allowed = detail::allowed_words(v->get_description(), kind);
      if (allowed.empty()) continue;
      v->operation([inner = *v, allowed](std::string& s) -> std::string {
        try {
          if (inner(s).empty()) return {};
        } catch (const CLI::ValidationError&) {  // CLI::IsMember's way to say "not of my type"
        }
        return s + (allowed.starts_with("one of") ? " is not allowed" : " is out of range") +
               ": give " + allowed;
      });
    }
    opt->transform(CLI::Validator(
        [kind, range](std::string& s) -> std::string {
          NumberText r = check_number(s, kind);
          if (!r.error.empty()) return s + " " + r.error + ": give " + range;
          s = std::move(r.text);
          return {};
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) strict_numbers(*sub);
}

}  // namespace dmrt::tools
