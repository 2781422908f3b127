// The client/server pairs the in-process transport tests run over (issue 26: one test body per
// behaviour, every HTTP client): the libcurl transport against civetweb (HTTP/1.1, as before),
// and the nghttp2 client against the h2c test server (HTTP/2 with prior knowledge; it speaks
// nothing else). Nothing skips: a client that cannot be made fails the case.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/str_cat.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s::testing {

enum class ServerPair { kCurlCivetweb, kNghttp2H2c };

inline HttpClient ClientOf(ServerPair p) {
  return p == ServerPair::kCurlCivetweb ? HttpClient::kCurl : HttpClient::kNghttp2;
}

inline std::string PairName(const ::testing::TestParamInfo<ServerPair>& info) {
  return info.param == ServerPair::kCurlCivetweb ? "curl_civetweb" : "nghttp2_h2c";
}

// civetweb on 127.0.0.1 (a free port) with `handlers` by path, the curl pair's server; `url` gets
// its address. nullptr when it has no listening port.
inline std::unique_ptr<CivetServer> StartCivetweb(
    int threads, const std::vector<std::pair<std::string, CivetHandler*>>& handlers, std::string* url) {
  auto server = std::make_unique<CivetServer>(
      std::vector<std::string>{"listening_ports", "127.0.0.1:0", "num_threads", std::to_string(threads)});
  for (const auto& [path, handler] : handlers) server->addHandler(path, handler);
  const std::vector<int> ports = server->getListeningPorts();
  if (ports.empty()) return nullptr;
  *url = absl::StrCat("http://127.0.0.1:", ports[0]);
  return server;
}

inline auto AllPairs() { return ::testing::Values(ServerPair::kCurlCivetweb, ServerPair::kNghttp2H2c); }

}  // namespace onequeue::k8s::testing
