// Error types the runtime throws: each names what went wrong and what to do about it.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace dmrt {

// Base of every dmrt error; what() is a complete sentence fit for a user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The memory pool cannot satisfy an allocation. Nothing already stored is affected.
class PoolExhausted : public Error {
 public:
  using Error::Error;
};

// A configuration (flags, cluster file) is malformed or inconsistent.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A verb addressed memory outside a node's region, or a node that does not exist.
class AddressError : public Error {
 public:
  using Error::Error;
};

// A request exceeds a limit the caller configured (key/value size, batch length, message size).
class LimitError : public Error {
 public:
  using Error::Error;
};

// Messaging, bootstrap or a peer failed (timeout, lost peer, malformed message).
class TransportError : public Error {
 public:
  using Error::Error;
};

// The message of a captured exception (what() when it is a std::exception), for reports that
// name the first failure of many workers.
std::string describe(const std::exception_ptr& e);

// strerror(e) as a string (thread-safe: strerror_r).
std::string err_text(int e);

}  // namespace dmrt
