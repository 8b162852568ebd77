// Files compiled into the binary (api/embed.cmake writes them at build time): the console's
// HTML, JS and CSS, the vendored uPlot, and the OpenAPI document's schemas. Each is kept as
// it is and gzip-compressed.
#pragma once

#include <span>
#include <string_view>

namespace logitaudit::api {

struct embedded_file {
  std::string_view name;  // the file's name, without its folder
  std::string_view body;
  std::string_view gzip;  // the body gzip-compressed (level 9)
};

std::span<const embedded_file> embedded_files();

}  // namespace logitaudit::api
