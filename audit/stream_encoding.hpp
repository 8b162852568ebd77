// The canonical binary encoding of a logit stream and its two XXH3-128 digests.
// The byte layout is specified in docs/protocol.md so that an independent program can
// recompute every digest from the stored encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "logit_stream.hpp"

namespace logitaudit::audit {

// Encodes the identity-relevant part of a stream (keying, ids, logprob bits, top-k).
// Pure; never fails.
std::vector<std::uint8_t> encode_canonical(const logit_stream& s);

// Decodes what encode_canonical wrote; nullopt on any malformed or trailing byte.
// Text, timings and content are not part of the encoding and come back empty.
std::optional<logit_stream> decode_canonical(std::span<const std::uint8_t> bytes);

// Digests of a stream: token = XXH3-128 of the token section, logit = XXH3-128 of the
// whole canonical encoding.
stream_digests digest(const logit_stream& s);

// The same, from an already encoded stream (what `verify` recomputes from disk);
// nullopt when the bytes do not decode.
std::optional<stream_digests> digest_canonical(std::span<const std::uint8_t> bytes);

// XXH3-128 of any bytes, in the digests' canonical order (an evidence bundle's content digest).
digest128 xxh128(std::string_view bytes);

// XXH3-64 of a token's bytes: the key of a text-keyed token.
std::int64_t text_key(const std::string& token_text);

}  // namespace logitaudit::audit
