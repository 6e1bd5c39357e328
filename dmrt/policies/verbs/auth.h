// The cluster secret and the bootstrap's challenge-response: HMAC-SHA256 (libsodium) over a fresh
// server nonce, a client nonce and the message, so a frame proves its sender holds the secret and
// cannot be replayed on another connection.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dmrt {
struct ClusterConfig;
}

namespace dmrt::verbs {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// The HMAC key derived from the cluster secret (the secret itself is not kept).
class ClusterKey {
 public:
  // From the environment variable DMRT_CLUSTER_SECRET, else from the config's secret_file; none
  // when neither is set. Throws ConfigError on an unreadable, empty, too short (< 16 bytes) or
  // group/world-readable secret file.
  static std::optional<ClusterKey> load(const ClusterConfig& config);
  static ClusterKey from_secret(const std::string& secret);
  ~ClusterKey();
  ClusterKey(const ClusterKey&) = default;
  ClusterKey& operator=(const ClusterKey&) = default;

  // HMAC(key, label || server nonce || client nonce || body).
  Mac mac(const char* label, const Nonce& server, const Nonce& client,
          const std::vector<uint8_t>& body) const;
  // Constant-time comparison of mac(...) with `got`.
  bool verify(const char* label, const Nonce& server, const Nonce& client,
              const std::vector<uint8_t>& body, const Mac& got) const;

 private:
  ClusterKey() = default;
  std::array<uint8_t, 32> key_{};
};

// Labels: a request MAC can never be taken for a reply MAC.
inline constexpr const char* kRequestLabel = "dmrt bootstrap v1 request";
inline constexpr const char* kReplyLabel = "dmrt bootstrap v1 reply";

Nonce random_nonce();
uint64_t random_u64();

}  // namespace dmrt::verbs
