// nghttp2 + OpenSSL implementation of HttpTransport (issue 26). Placeholder until it lands.
#include "k8s_client/http_transport.h"

namespace onequeue::k8s {

absl::StatusOr<std::unique_ptr<HttpTransport>> NewNghttp2Transport(const TransportConfig&) {
  return absl::UnimplementedError("the nghttp2 HTTP client is not built yet");
}

}  // namespace onequeue::k8s
