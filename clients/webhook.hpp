// Webhook deliveries on the wire: a JSON payload POSTed with an HMAC-SHA256 signature of its
// bytes, so that the receiver can tell the daemon's alerts from anyone else's.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <string>

#include "http_client.hpp"

namespace logitaudit::clients {

// HMAC-SHA256 of `data` under `key`, in hex.
std::string hmac_sha256_hex(const std::string& key, const std::string& data);

// The header that carries the signature: "sha256=<hex>".
inline constexpr const char* signature_header = "X-Logitaudit-Signature";

struct webhook_attempt {
  bool delivered = false;  // a 2xx answer
  unsigned status = 0;     // the receiver's status; 0 when there was none
  std::string error;       // why not, in words
};

// POSTs `body` to `url` once, signed with `secret`, within `timeout`. Suspends; never throws
// for I/O or for the receiver's answer.
net::awaitable<webhook_attempt> post_webhook(std::string url, std::string secret, std::string body,
                                             std::string delivery_id, std::chrono::milliseconds timeout);

}  // namespace logitaudit::clients
