#include "dmrt/runtime/error.h"

#include <cstring>

namespace dmrt {

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::string err_text(int e) {
  char buf[256];
  // GNU strerror_r returns the message (possibly a static string, not buf).
  return strerror_r(e, buf, sizeof buf);
}

}  // namespace dmrt
