// The names the test files share, written once: the project's namespace, nlohmann's json,
// Asio, Beast's http, std::filesystem and the chrono literals.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace logitaudit {}

using namespace logitaudit;
using json = nlohmann::json;
namespace net = boost::asio;
namespace http = boost::beast::http;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
