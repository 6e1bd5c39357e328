// Registry of memory-node services: each index registers its services by name, a node program
// (tools/dmrt-node) hosts any of them and advertises them in its node's services word.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/service.h"

namespace dmrt {

// Adds `name` (an unsigned in [lo, hi]) to a node program's flag group `g` (CLI11's there). The
// range check is written here, over whatever `g` is, so that index headers declaring services need
// not include CLI11, whose header alone costs seconds in every translation unit that includes it.
// Its description is CLI::Range's ("UINT in [0 - 63]"), which the node program's strict numbers
// (tools/common/cli_numbers.h) read to say the range in their own refusal.
template <class G>
auto add_ranged_flag(G& g, const std::string& name, unsigned& value, const std::string& help,
                     unsigned lo, unsigned hi) {
  const std::string range = "[" + std::to_string(lo) + " - " + std::to_string(hi) + "]";
  return g.add_option(name, value, help)
      ->check(
          [lo, hi, range](const std::string& s) -> std::string {
            unsigned long long x = 0;
            const char* end = s.data() + s.size();
            auto [p, ec] = std::from_chars(s.data(), end, x);
            if (ec != std::errc() || p != end || x < lo || x > hi)
              return "Value " + s + " not in range " + range;
            return {};
          },
          "UINT in " + range)
      ->capture_default_str();
}

// What a service registers about itself. `bit` is its bit in a node's services word
// (layout::kServicesOffset): the node program sets it once the service runs, so that compute nodes
// in other processes can tell whether it is there. A ServiceRegistry refuses (at compile time) two
// services with one name or one bit.
struct ServiceInfo {
  std::string_view name;     // what --service takes, e.g. "rolex", "hstore-hts"
  std::string_view summary;  // one line, for --list-services
  unsigned bit;              // 0..61 (62, 63: layout::kServicesClock, kServicesReady)
};

constexpr uint64_t service_bit(const ServiceInfo& s) {
  return uint64_t{1} << s.bit;
}

// Where a service starts: fibers homed on the node a host serves. Each transport's node program
// implements it over its ServiceHost (verbs: a reserved client-thread slot of the node's Cluster;
// shm: a thread on the attached pool). Hosts run until the node stops; a host's failure is
// reported when the node stops it.
template <Transport T>
class ServiceLauncher {
 public:
  virtual ~ServiceLauncher() = default;
  virtual NodeId node() const = 0;
  // Starts `fibers` fibers of `body` on node(); `what` names them in reports.
  virtual void launch(std::string_view what, unsigned fibers, ServiceBody<T> body) = 0;
};

// A registration: a default-constructible type holding the service's own options, with
//   static constexpr ServiceInfo kInfo;
//   template <class App> void add_flags(App& app);          (optional: CLI11 flags, e.g. --x-y)
//   template <Transport T> void start(ServiceLauncher<T>&) const;
//   std::string describe() const;                           (optional: one line of options)
// Registrations live in their index's folder (dmrt/indexes/NAME/detail/services.h); the node
// program lists them once (tools/dmrt-node/services.h).
template <class S>
concept ServiceRegistration = std::default_initializable<S> && requires {
  { S::kInfo } -> std::convertible_to<ServiceInfo>;
};

namespace detail {
template <size_t N>
constexpr bool distinct_services(const std::array<ServiceInfo, N>& s) {
  for (size_t i = 0; i < N; ++i) {
    if (s[i].bit >= 62 || s[i].name.empty()) return false;
    for (size_t j = i + 1; j < N; ++j)
      if (s[i].bit == s[j].bit || s[i].name == s[j].name) return false;
  }
  return true;
}
}  // namespace detail

// The services a node program can host, with one options object each.
template <ServiceRegistration... S>
class ServiceRegistry {
 public:
  static constexpr std::array<ServiceInfo, sizeof...(S)> kServices{ServiceInfo(S::kInfo)...};
  static_assert(detail::distinct_services(kServices),
                "two registered services share a name or a services-word bit (or a bit >= 62)");

  // The registered service called `name`, or null.
  static const ServiceInfo* find(std::string_view name) {
    for (const ServiceInfo& s : kServices)
      if (s.name == name) return &s;
    return nullptr;
  }
  // "a, b, c": for error messages.
  static std::string names() {
    std::string out;
    for (const ServiceInfo& s : kServices) out += (out.empty() ? "" : ", ") + std::string(s.name);
    return out;
  }

  // Gives each service that has flags an option group of `app` named after it, and adds its
  // flags there. Returns the groups in registration order (null for a service without flags) so
  // that the caller can refuse flags of services it was not asked to run.
  template <class App>
  auto add_flags(App& app) {
    using Group = decltype(app.add_option_group(std::string()));
    std::array<Group, sizeof...(S)> groups{};
    size_t i = 0;
    (add_one(app, std::get<S>(services_), groups[i++]), ...);
    return groups;
  }

  // Starts the service called `name` through `launcher` and returns its services-word bit.
  template <Transport T>
  uint64_t start(std::string_view name, ServiceLauncher<T>& launcher) const {
    uint64_t bit = 0;
    bool found = ((S::kInfo.name == name
                       ? (std::get<S>(services_).start(launcher), bit = service_bit(S::kInfo), true)
                       : false) ||
                  ...);
    if (!found)
      throw ConfigError("no service '" + std::string(name) + "' (the services are: " + names() +
                        ")");
    return bit;
  }

  // The options the service called `name` runs with, one line ("" when it has none to show).
  std::string describe(std::string_view name) const {
    std::string out;
    ((S::kInfo.name == name ? (out = describe_one(std::get<S>(services_)), true) : false) || ...);
    return out;
  }

 private:
  template <class App, class One, class Group>
  static void add_one(App& app, One& s, Group& group) {
    if constexpr (requires { s.add_flags(app); }) {
      group = app.add_option_group(std::string(One::kInfo.name),
                                   "flags of --service " + std::string(One::kInfo.name));
      s.add_flags(*group);
    }
  }
  template <class One>
  static std::string describe_one(const One& s) {
    if constexpr (requires { s.describe(); })
      return s.describe();
    else
      return {};
  }

  std::tuple<S...> services_;
};

}  // namespace dmrt
