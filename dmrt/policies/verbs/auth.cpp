#include "dmrt/policies/verbs/auth.h"

#include <sodium.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/error.h"

namespace dmrt::verbs {

namespace {

void init_sodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) throw Error("libsodium failed to initialise");
}

constexpr size_t kMinSecret = 16;
constexpr size_t kMaxSecretFile = 4096;

}  // namespace

ClusterKey::~ClusterKey() {
  sodium_memzero(key_.data(), key_.size());
}

ClusterKey ClusterKey::from_secret(const std::string& secret) {
  init_sodium();
  if (secret.size() < kMinSecret)
    throw ConfigError("the cluster secret has " + std::to_string(secret.size()) +
                      " bytes; use at least " + std::to_string(kMinSecret) +
                      " (e.g. head -c 32 /dev/urandom | base64)");
  ClusterKey k;
  // Hashing gives a fixed-size key whatever the secret's length and form.
  crypto_hash_sha256(k.key_.data(), reinterpret_cast<const unsigned char*>(secret.data()),
                     secret.size());
  return k;
}

std::optional<ClusterKey> ClusterKey::load(const ClusterConfig& config) {
  if (const char* env = std::getenv("DMRT_CLUSTER_SECRET"); env && *env) return from_secret(env);
  if (config.secret_file.empty()) return std::nullopt;
  const std::string& path = config.secret_file;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError("secret_file '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw ConfigError("secret_file '" + path + "' is not a regular file");
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw ConfigError("secret_file '" + path + "' is readable by other users (chmod 600 it)");
  if (static_cast<uint64_t>(st.st_size) > kMaxSecretFile)
    throw ConfigError("secret_file '" + path + "' has " + std::to_string(st.st_size) +
                      " bytes; a secret file holds at most " + std::to_string(kMaxSecretFile));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read secret_file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.empty()) throw ConfigError("secret_file '" + path + "' is empty");
  ClusterKey k = from_secret(s);
  sodium_memzero(s.data(), s.size());
  return k;
}

Mac ClusterKey::mac(const char* label, const Nonce& server, const Nonce& client,
                    const std::vector<uint8_t>& body) const {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key_.data(), key_.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(label),
                                std::strlen(label) + 1);
  crypto_auth_hmacsha256_update(&st, server.data(), server.size());
  crypto_auth_hmacsha256_update(&st, client.data(), client.size());
  crypto_auth_hmacsha256_update(&st, body.data(), body.size());
  Mac m;
  crypto_auth_hmacsha256_final(&st, m.data());
  return m;
}

bool ClusterKey::verify(const char* label, const Nonce& server, const Nonce& client,
                        const std::vector<uint8_t>& body, const Mac& got) const {
  Mac want = mac(label, server, client, body);
  return sodium_memcmp(want.data(), got.data(), want.size()) == 0;
}

Nonce random_nonce() {
  init_sodium();
  Nonce n;
  randombytes_buf(n.data(), n.size());
  return n;
}

uint64_t random_u64() {
  init_sodium();
  uint64_t v;
  randombytes_buf(&v, sizeof v);
  return v;
}

}  // namespace dmrt::verbs
