#pragma once
// What the transport tests against a real kube-apiserver share: the admin's connection with the
// client under test, requests and objects to send.
#include <ostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/k8s_cluster.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s {

// gtest prints the parameter of a failing case with this (found by ADL) instead of its bytes.
inline void PrintTo(HttpClient c, std::ostream* os) { *os << (c == HttpClient::kCurl ? "curl" : "nghttp2"); }

namespace testing_support {

inline const ::onequeue::testing::K8sClusterInfo& Cluster() {
  return ::onequeue::testing::K8sClusterEnvironment::Info();
}

inline std::string ClientName(HttpClient c) { return c == HttpClient::kCurl ? "curl" : "nghttp2"; }

// The admin's connection to the cluster, with the client under test.
inline TransportConfig AdminConfig(HttpClient client) {
  TransportConfig c;
  c.client = client;
  c.server = Cluster().server;
  c.ca_file = Cluster().ca_file;
  c.bearer_token = Cluster().admin_token;
  return c;
}

inline HttpRequest Request(std::string method, std::string path, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = std::move(body);
  return r;
}

inline std::string ConfigMapJson(const std::string& name, const std::string& value) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")", name,
                      R"("},"data":{"k":")", value, R"("}})");
}

}  // namespace testing_support
}  // namespace onequeue::k8s
