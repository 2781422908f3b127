// A small HTTP/2 server for tests, in process: nghttp2's server API over plain TCP on
// 127.0.0.1:0, HTTP/2 with prior knowledge (h2c, no TLS, no HTTP/1.1 upgrade), on its own thread.
// The transport tests that run the libcurl transport against civetweb (an HTTP/1.1 server) run
// the nghttp2 client against this one (it speaks HTTP/2 only).
//
// Routes are by path (the query is not part of the match; the handler's body function sees it).
// A route answers after a delay (counting the requests waiting for their answer at once, and the
// peak), with a body computed from the request; or it streams: its body first, then a chunk
// every so often (or nothing more) until the client resets the stream or goes away.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace onequeue::k8s::testing {

struct H2cRequest {
  std::string method;
  std::string path;  // with the query: "/apis/x?watch=true"
  std::string body;
};

struct H2cRoute {
  int status = 200;
  std::string content_type = "application/json";
  absl::Duration delay = absl::ZeroDuration();  // before the answer's headers
  // The answer's body (a streaming route: what it sends first). Null: empty.
  std::function<std::string(const H2cRequest&)> body;
  // Keep the answer open after `body`; then send `chunk` every `chunk_every` (zero: nothing
  // more) until the client goes.
  bool streaming = false;
  absl::Duration chunk_every = absl::ZeroDuration();
  std::string chunk = "{}\n";
};

class H2cTestServer {
 public:
  // Listens on 127.0.0.1 on a free port and starts the server thread.
  static absl::StatusOr<std::unique_ptr<H2cTestServer>> Start();
  // Stops the thread and closes every connection (open streams end abruptly).
  ~H2cTestServer();
  H2cTestServer(const H2cTestServer&) = delete;
  H2cTestServer& operator=(const H2cTestServer&) = delete;

  // Adds (or replaces) the route of `path`. Any other path answers 404.
  void Route(const std::string& path, H2cRoute route);
  std::string url() const;  // "http://127.0.0.1:PORT"
  int port() const;

  // For the route of `path`: requests received; requests waiting for their answer now and at
  // most at once; streams open now (request received, not closed by either side).
  int requests(const std::string& path) const;
  int waiting(const std::string& path) const;
  int peak_waiting(const std::string& path) const;
  int open(const std::string& path) const;
  // HTTP/2 connections accepted so far.
  int connections() const;

  class Impl;

 private:
  explicit H2cTestServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onequeue::k8s::testing
