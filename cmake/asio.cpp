// Asio's and Beast's non-template code, compiled once here instead of inline in every file
// that includes them (BOOST_ASIO_SEPARATE_COMPILATION, BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>  // https backends (clients/http_client.cpp)
#include <boost/beast/src.hpp>
