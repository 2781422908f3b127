// OpenSSL for the nghttp2 client: one SSL_CTX per transport (trust, client certificate, ALPN
// "h2" only) and the checks of a finished handshake. Internal to src/k8s_client.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s::internal {

// Stands for the request's URL in an error made before the request is known (a TLS error names
// it inside the message, as curl's does): replaced per call.
inline constexpr char kWherePlaceholder[] = "\x01where\x01";

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

// TLS 1.2+, ALPN offering only "h2", peer verification on unless insecure_skip_tls_verify:
// ca_pem (in memory) or ca_file, else the system's default paths. The client certificate and key
// from PEM bytes or files. An error is what curl reports for the same config
// (FailedPrecondition); `where` names the server.
absl::StatusOr<SslCtxPtr> NewClientSslContext(const TransportConfig& config, const std::string& where);

// An SSL for one connection on `fd`: SNI for a name, and the name or IP checked against the
// certificate (`host`: tls_server_name, else the URL's host).
absl::StatusOr<SSL*> NewClientSsl(SSL_CTX* ctx, int fd, const std::string& host, bool verify);

// After the handshake: ALPN chose h2, else FailedPrecondition naming `where`.
absl::Status CheckNegotiatedH2(SSL* ssl, const std::string& where);

// The message of a failed handshake: the verification result when that failed (then
// FailedPrecondition, as curl's CURLE_PEER_FAILED_VERIFICATION), else Unavailable with
// OpenSSL's error queue.
absl::Status HandshakeError(SSL* ssl, const std::string& where);

// OpenSSL's error queue as text (and clears it); `fallback` when empty.
std::string SslErrors(const char* fallback);

}  // namespace onequeue::k8s::internal
