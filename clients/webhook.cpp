// Signed POSTs through http_client; the signature through OpenSSL's HMAC.
#include "webhook.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace logitaudit::clients {

std::string hmac_sha256_hex(const std::string& key, const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), md, &len);
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(digits[md[i] >> 4]);
    hex.push_back(digits[md[i] & 15]);
  }
  return hex;
}

net::awaitable<webhook_attempt> post_webhook(std::string url, std::string secret, std::string body,
                                             std::string delivery_id, std::chrono::milliseconds timeout) {
  auto ep = parse_endpoint(url);
  if (!ep) co_return webhook_attempt{false, 0, "webhook url " + ep.error()};
  http_options o;
  o.connect_timeout = std::min(timeout, std::chrono::milliseconds(5000));
  o.first_byte_timeout = timeout;
  o.total_timeout = timeout;
  o.max_body = 1 << 20;
  http_client http(co_await net::this_coro::executor, *ep, o);
  const std::string wire = http.serialize(
      http::verb::post, ep->base_path.empty() ? "/" : "", body,
      {{signature_header, "sha256=" + hmac_sha256_hex(secret, body)}, {"X-Logitaudit-Delivery", delivery_id}});
  auto c = co_await http.acquire();
  if (!c) co_return webhook_attempt{false, 0, std::string(to_string(c.error().code)) + ": " + c.error().message};
  auto x = co_await http.exchange(std::move(*c), wire);
  if (!x) co_return webhook_attempt{false, x.error().http_status, std::string(to_string(x.error().code)) + ": " + x.error().message};
  if (x->status < 200 || x->status > 299) co_return webhook_attempt{false, x->status, "HTTP " + std::to_string(x->status)};
  co_return webhook_attempt{true, x->status, ""};
}

}  // namespace logitaudit::clients
