// sha256 of model files through OpenSSL's EVP interface, with a cache keyed by what changes
// when the file does.
#include "model_file.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

namespace logitaudit::clients {
namespace {

struct file_state {
  std::int64_t size = 0, mtime_ns = 0;
  bool operator==(const file_state&) const = default;
};

std::optional<file_state> state_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return file_state{static_cast<std::int64_t>(st.st_size),
                    static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

std::mutex cache_mutex;
std::map<std::string, std::pair<file_state, std::string>> cache;

// One thread for every hash: a second backend on the same file waits and then hits the cache.
net::thread_pool& hashing_pool() {
  static net::thread_pool pool(1);
  return pool;
}

net::awaitable<std::string> hash_on_pool(std::string path) {
  auto hex = file_sha256(path);
  OPENSSL_thread_stop();  // this thread's OpenSSL state, freed now rather than never (the pool outlives main)
  co_return hex;
}

}  // namespace

std::string file_sha256(const std::string& path) {
  const auto before = state_of(path);
  if (!before) return "";
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(path); it != cache.end() && it->second.first == *before) return it->second.second;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return "";
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return "";
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) return "";
    if (n < buf.size()) break;
  }
  if (std::ferror(f.get())) return "";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return "";
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(digits[md[i] >> 4]);
    hex.push_back(digits[md[i] & 15]);
  }
  // A file rewritten while it was read is hashed again next time.
  if (state_of(path) == before) {
    std::lock_guard lock(cache_mutex);
    cache[path] = {*before, hex};
  }
  return hex;
}

net::awaitable<std::string> model_file_sha256(std::string path) {
  co_return co_await net::co_spawn(hashing_pool(), hash_on_pool(std::move(path)), net::use_awaitable);
}

namespace {

// A GGUF file's metadata, read in order (little-endian, as every GGUF is written).
class gguf_reader {
 public:
  explicit gguf_reader(const std::string& path) : f_(std::fopen(path.c_str(), "rb")) {}
  ~gguf_reader() {
    if (f_) std::fclose(f_);
  }
  gguf_reader(const gguf_reader&) = delete;
  gguf_reader& operator=(const gguf_reader&) = delete;
  bool ok() const { return f_ && ok_; }

  template <class T>
  T number() {
    T v{};
    ok_ = ok_ && f_ && std::fread(&v, sizeof v, 1, f_) == 1;
    return v;
  }
  std::string text() {
    const auto n = number<std::uint64_t>();
    if (!ok() || n > (1u << 20)) return ok_ = false, std::string();
    std::string s(n, '\0');
    ok_ = n == 0 || std::fread(s.data(), 1, n, f_) == n;
    return s;
  }
  // A value of GGUF type `type`: an unsigned integer's value, else nullopt (skipped).
  std::optional<std::int64_t> value(std::uint32_t type) {
    switch (type) {
      case 0: return number<std::uint8_t>();
      case 1: return number<std::int8_t>();
      case 2: return number<std::uint16_t>();
      case 3: return number<std::int16_t>();
      case 4: return number<std::uint32_t>();
      case 5: return number<std::int32_t>();
      case 6: number<float>(); return std::nullopt;
      case 7: number<std::uint8_t>(); return std::nullopt;
      case 8: text(); return std::nullopt;
      case 9: {
        const auto inner = number<std::uint32_t>();
        const auto n = number<std::uint64_t>();
        for (std::uint64_t i = 0; ok() && i < n; ++i) value(inner);
        return std::nullopt;
      }
      case 10: return static_cast<std::int64_t>(number<std::uint64_t>());
      case 11: return number<std::int64_t>();
      case 12: number<double>(); return std::nullopt;
      default: ok_ = false; return std::nullopt;
    }
  }

 private:
  std::FILE* f_;
  bool ok_ = true;
};

}  // namespace

std::optional<std::int64_t> gguf_context_length(const std::string& path) {
  gguf_reader r(path);
  if (r.number<std::uint32_t>() != 0x46554747u) return std::nullopt;  // "GGUF"
  const auto version = r.number<std::uint32_t>();
  if (!r.ok() || (version != 2 && version != 3)) return std::nullopt;
  r.number<std::uint64_t>();  // tensors
  const auto keys = r.number<std::uint64_t>();
  std::string architecture;
  std::map<std::string, std::int64_t> numbers;
  for (std::uint64_t i = 0; r.ok() && i < keys; ++i) {
    const auto key = r.text();
    const auto type = r.number<std::uint32_t>();
    if (type == 8 && key == "general.architecture") {
      architecture = r.text();
      continue;
    }
    const auto v = r.value(type);
    if (v && key.ends_with(".context_length")) numbers[key] = *v;
  }
  const auto it = numbers.find(architecture + ".context_length");
  if (architecture.empty() || it == numbers.end() || it->second <= 0) return std::nullopt;
  return it->second;
}

}  // namespace logitaudit::clients
