// Canonical encoding, little-endian, fixed field order (docs/protocol.md, "Stream encoding").
#include "stream_encoding.hpp"

#include <bit>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace logitaudit::audit {
namespace {

constexpr std::uint8_t kMagic[4] = {'L', 'A', 'S', '1'};
constexpr std::uint8_t kTokenMagic[4] = {'L', 'A', 'T', '1'};
constexpr std::size_t kMaxTop = 65535;

class writer {
 public:
  explicit writer(std::vector<std::uint8_t>& out) : out_(out) {}
  void bytes(const std::uint8_t* p, std::size_t n) { out_.insert(out_.end(), p, p + n); }
  template <class T>
  void le(T v) {
    auto u = std::bit_cast<std::make_unsigned_t<T>>(v);
    for (std::size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<std::uint8_t>(u >> (8 * i)));
  }
  void f64(double d) { le(std::bit_cast<std::uint64_t>(d)); }
  void key(token_keying k, std::int64_t v) {
    if (k == token_keying::id) le(static_cast<std::int32_t>(v));
    else le(v);
  }

 private:
  std::vector<std::uint8_t>& out_;
};

class reader {
 public:
  explicit reader(std::span<const std::uint8_t> in) : in_(in) {}
  template <class T>
  bool le(T& v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::make_unsigned_t<T> u = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      u |= static_cast<std::make_unsigned_t<T>>(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    v = static_cast<T>(u);
    return true;
  }
  bool f64(double& d) {
    std::uint64_t u;
    if (!le(u)) return false;
    d = std::bit_cast<double>(u);
    return true;
  }
  bool key(token_keying k, std::int64_t& v) {
    if (k == token_keying::id) {
      std::int32_t i;
      if (!le(i)) return false;
      v = i;
      return true;
    }
    return le(v);
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

digest128 to_digest(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  digest128 d;
  std::memcpy(d.bytes, c.digest, 16);
  return d;
}

std::vector<std::uint8_t> encode_tokens(const logit_stream& s) {
  std::vector<std::uint8_t> out;
  out.reserve(9 + s.tokens.size() * 8);
  writer w(out);
  w.bytes(kTokenMagic, 4);
  w.le(static_cast<std::uint8_t>(s.keying));
  w.le(static_cast<std::uint32_t>(s.tokens.size()));
  for (const auto& t : s.tokens) w.key(s.keying, t.key);
  return out;
}

}  // namespace

std::string digest128::hex() const {
  static const char* h = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s.push_back(h[b >> 4]);
    s.push_back(h[b & 15]);
  }
  return s;
}

std::vector<std::uint8_t> encode_canonical(const logit_stream& s) {
  std::vector<std::uint8_t> out;
  std::size_t top = s.tokens.empty() ? 0 : s.tokens.front().top.size();
  out.reserve(9 + s.tokens.size() * (14 + top * 16));
  writer w(out);
  w.bytes(kMagic, 4);
  w.le(static_cast<std::uint8_t>(s.keying));
  w.le(static_cast<std::uint32_t>(s.tokens.size()));
  for (const auto& t : s.tokens) {
    w.key(s.keying, t.key);
    w.f64(t.logprob);
    const std::size_t n = std::min(t.top.size(), kMaxTop);
    w.le(static_cast<std::uint16_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      w.key(s.keying, t.top[i].key);
      w.f64(t.top[i].logprob);
    }
  }
  return out;
}

std::optional<logit_stream> decode_canonical(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 9 || std::memcmp(bytes.data(), kMagic, 4) != 0) return std::nullopt;
  reader r(bytes.subspan(4));
  logit_stream s;
  std::uint8_t keying;
  std::uint32_t n;
  if (!r.le(keying) || keying > 1 || !r.le(n)) return std::nullopt;
  s.keying = static_cast<token_keying>(keying);
  // Each token needs at least 14 bytes: refuse counts the buffer cannot hold before reserving.
  if (n > bytes.size() / 14) return std::nullopt;
  s.tokens.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    token_step t;
    std::uint16_t k;
    if (!r.key(s.keying, t.key) || !r.f64(t.logprob) || !r.le(k)) return std::nullopt;
    t.top.resize(k);
    for (auto& e : t.top)
      if (!r.key(s.keying, e.key) || !r.f64(e.logprob)) return std::nullopt;
    s.tokens.push_back(std::move(t));
  }
  if (!r.done()) return std::nullopt;
  return s;
}

stream_digests digest(const logit_stream& s) {
  const auto tokens = encode_tokens(s);
  const auto all = encode_canonical(s);
  return {to_digest(XXH3_128bits(tokens.data(), tokens.size())),
          to_digest(XXH3_128bits(all.data(), all.size()))};
}

std::optional<stream_digests> digest_canonical(std::span<const std::uint8_t> bytes) {
  auto s = decode_canonical(bytes);
  if (!s) return std::nullopt;
  const auto tokens = encode_tokens(*s);
  return stream_digests{to_digest(XXH3_128bits(tokens.data(), tokens.size())),
                        to_digest(XXH3_128bits(bytes.data(), bytes.size()))};
}

digest128 xxh128(std::string_view bytes) { return to_digest(XXH3_128bits(bytes.data(), bytes.size())); }

std::int64_t text_key(const std::string& token_text) {
  return static_cast<std::int64_t>(XXH3_64bits(token_text.data(), token_text.size()));
}

}  // namespace logitaudit::audit
