// The heavy headers almost every file includes, parsed once per build (precompiled header):
// Asio and Beast with coroutines, nlohmann_json and spdlog.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
