// Static files from the embedded set, with validators and compression.
#include "console_routes.hpp"

#include <map>
#include <memory>
#include <xxhash.h>

#include "embedded_files.hpp"

namespace logitaudit::api {
namespace {

struct static_file {
  std::string body, gzip;  // gzip empty: never sent compressed (it would not be smaller)
  std::string content_type;
  std::string etag;        // "\"<xxh3-64 hex>\""
  bool immutable = false;  // named by a versioned URL: cache for a year
};

using file_table = std::map<std::string, static_file, std::less<>>;

std::string content_type_of(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> types[] = {
      {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},            {".json", "application/json"}};
  for (const auto& [ext, type] : types)
    if (name.ends_with(ext)) return std::string(type);
  return "application/octet-stream";
}

std::string etag_of(std::string_view body) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(body.data(), body.size())));
  return "\"" + std::string(hex) + "\"";
}

// The console's files; index.html names the others by versioned URLs ({{name}} -> the URL).
std::shared_ptr<const file_table> console_files() {
  auto t = std::make_shared<file_table>();
  std::string index;
  for (const auto& f : embedded_files()) {
    if (f.name == "openapi_schemas.json") continue;  // the document's, not the console's
    if (f.name == "index.html") {
      index = std::string(f.body);
      continue;
    }
    static_file s{std::string(f.body), f.gzip.size() < f.body.size() ? std::string(f.gzip) : std::string(),
                  content_type_of(f.name), etag_of(f.body), true};
    (*t)[std::string(f.name)] = std::move(s);
  }
  for (const auto& [name, file] : *t) {
    const std::string placeholder = "{{" + name + "}}";
    const std::string url = "/console/" + name + "?v=" + file.etag.substr(1, file.etag.size() - 2);
    for (auto at = index.find(placeholder); at != std::string::npos; at = index.find(placeholder, at + url.size()))
      index.replace(at, placeholder.size(), url);
  }
  // The page itself is revalidated each time (it is small), so that a new daemon's files show.
  (*t)["index.html"] = static_file{index, {}, content_type_of("index.html"), etag_of(index), false};
  return t;
}

bool etag_matches(const std::string& if_none_match, const std::string& etag) {
  if (if_none_match == "*") return true;
  // A list of (possibly weak) validators: "a", W/"b".
  for (std::size_t at = if_none_match.find(etag); at != std::string::npos; at = if_none_match.find(etag, at + 1)) return true;
  return false;
}

api_response serve(const static_file& f, const request_context& ctx, bool versioned) {
  api_response r;
  r.content_type = f.content_type;
  r.headers.emplace_back(http::field::etag, f.etag);
  r.headers.emplace_back(http::field::cache_control,
                         f.immutable && versioned ? "public, max-age=31536000, immutable" : "no-cache");
  r.headers.emplace_back(http::field::vary, "Accept-Encoding");
  if (!ctx.if_none_match.empty() && etag_matches(ctx.if_none_match, f.etag)) {
    r.status = 304;
    return r;
  }
  const bool gzip = !f.gzip.empty() && ctx.accept_encoding.find("gzip") != std::string::npos;
  if (gzip) r.headers.emplace_back(http::field::content_encoding, "gzip");
  r.shared_body = std::shared_ptr<const std::string>(std::shared_ptr<const static_file>(), gzip ? &f.gzip : &f.body);
  return r;
}

net::awaitable<api_response> route_index(std::shared_ptr<const file_table> files, request_context ctx) {
  co_return serve(files->at("index.html"), ctx, false);
}

net::awaitable<api_response> route_file(std::shared_ptr<const file_table> files, request_context ctx) {
  auto it = files->find(ctx.params[0]);
  if (it == files->end() || ctx.params[0] == "index.html")
    co_return error_response(service_errc::not_found, "not_found", "no console file '" + ctx.params[0].substr(0, 64) + "'", "file");
  const auto v = ctx.query.find("v");
  const bool versioned = v != ctx.query.end() && "\"" + v->second + "\"" == it->second.etag;
  co_return serve(it->second, ctx, versioned);
}

}  // namespace

void add_console_routes(router& r, const route_services&) {
  auto files = console_files();
  using http::verb;
  const route_doc page{.summary = "The web console", .needs = access::open, .media = "text/html", .documented = false};
  r.add(verb::get, "/", page, [files](const request_context& c) { return route_index(files, c); });
  route_doc file = page;
  file.query = {{"v", "string", "the file's version (its ETag): a versioned URL is cached for a year"}};
  r.add(verb::get, "/console/{file}", file, [files](const request_context& c) { return route_file(files, c); });
  r.add(verb::get, "/favicon.ico", page, [files](const request_context& c) {
    request_context icon = c;
    icon.params = {"favicon.svg"};
    return route_file(files, icon);
  });
}

}  // namespace logitaudit::api
