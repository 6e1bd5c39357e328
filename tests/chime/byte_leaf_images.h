// Torn-line fixtures over CHIME byte-key leaf images (64-byte keys): the encoded bytes of an image
// and whether a mix of two encodings is accepted, shared by the keys and fences tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../common/torn_images.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt::test {

struct ByteLeafImages : TornImages {
  btree::ByteKeys kp{64};
  chime::Geometry g;
  explicit ByteLeafImages(chime::Geometry geometry) : g(geometry) {}

  std::vector<uint8_t> bytes(chime::LeafImage<btree::ByteKeys>& img, chime::Segment s) const {
    img.encode(s, false);
    return {img.enc.begin(), img.enc.begin() + static_cast<long>(g.enc_bytes())};
  }
  // A whole-leaf image decoded from `mix` passes levels 1 and 2 of the validation.
  bool accepts(const std::vector<uint8_t>& mix) const {
    chime::LeafImage<btree::ByteKeys> img(g, kp);
    img.forget();
    img.mark({0, g.node_words()});
    std::copy(mix.begin(), mix.end(), img.enc.begin());
    img.decode({0, g.node_words()});
    return img.consistent(nullptr);
  }
};

}  // namespace dmrt::test
