# Finds every dependency among Debian 12's packages; a missing one stops the configure step
# with the name of the package that brings it (scripts/bootstrap.sh installs them all).

macro(logitaudit_require found package what)
  if(NOT ${found})
    message(FATAL_ERROR "logitaudit: ${what} not found. Install the Debian package '${package}' "
                        "(scripts/bootstrap.sh installs every build dependency).")
  endif()
endmacro()

find_package(Boost 1.81 CONFIG QUIET)
logitaudit_require(Boost_FOUND libboost1.81-dev "Boost >= 1.81 (Asio, Beast)")

find_package(nlohmann_json 3.10 CONFIG QUIET)
logitaudit_require(nlohmann_json_FOUND nlohmann-json3-dev "nlohmann_json")

find_package(SQLite3 QUIET)
logitaudit_require(SQLite3_FOUND libsqlite3-dev "SQLite3")

find_package(spdlog CONFIG QUIET)
logitaudit_require(spdlog_FOUND libspdlog-dev "spdlog")

find_package(CLI11 CONFIG QUIET)
logitaudit_require(CLI11_FOUND libcli11-dev "CLI11")

find_package(OpenSSL 3 QUIET)
logitaudit_require(OPENSSL_FOUND libssl-dev "OpenSSL (https backends, sha256 of model files, HMAC of webhook payloads)")

find_package(Threads REQUIRED)

find_package(PkgConfig QUIET)
logitaudit_require(PKG_CONFIG_FOUND pkg-config "pkg-config")
pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
logitaudit_require(XXHASH_FOUND libxxhash-dev "xxHash (libxxhash)")

if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  find_package(GTest CONFIG QUIET)
  logitaudit_require(GTest_FOUND libgtest-dev "GoogleTest")
endif()

pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
logitaudit_require(LIBPQ_FOUND libpq-dev "libpq (the PostgreSQL store)")
