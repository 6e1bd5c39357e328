// A compile-time list of transports, and a call for each of its types: how the one list of a
// build's transports (dmrt/policies/transports.h, generated) drives dispatch by name.
#pragma once

#include "dmrt/runtime/transport.h"

namespace dmrt {

template <Transport... T>
struct TransportList {};

namespace detail {
// Raw<void, T...> -> TransportList<T...>: lets a preprocessor list of ", T" items start with a
// placeholder (dmrt/policies/transports.h).
template <class... T>
struct Raw;
template <class L>
struct DropPlaceholder;
template <class... T>
struct DropPlaceholder<Raw<void, T...>> {
  using type = TransportList<T...>;
};
}  // namespace detail

// Calls f.template operator()<T>() for each T of the list, in order.
template <class... T, class F>
constexpr void for_each_transport(TransportList<T...>, F&& f) {
  (f.template operator()<T>(), ...);
}

}  // namespace dmrt
