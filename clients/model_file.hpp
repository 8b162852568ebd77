// The sha256 of a model file, the model's identity beyond its path: a checkpoint re-pulled to
// the same path changes it. Hashing gigabytes takes seconds, so it runs on a thread of its own
// and is cached by path, size and modification time.
#pragma once

#include <boost/asio.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace logitaudit::clients {

namespace net = boost::asio;

// The file's sha256 (hex), or "" when it cannot be read. Suspends (the caller's executor is
// never blocked); thread-safe.
net::awaitable<std::string> model_file_sha256(std::string path);

// The same, synchronously (tools and tests); "" when unreadable.
std::string file_sha256(const std::string& path);

// The context the model was trained for, from its GGUF metadata ("<architecture>.context_length"):
// llama-server caps a slot's context there. Reads the header and metadata only (the tokenizer's
// arrays are skipped); nullopt when the file is not a GGUF of version 2 or 3 or says none.
std::optional<std::int64_t> gguf_context_length(const std::string& path);

}  // namespace logitaudit::clients
