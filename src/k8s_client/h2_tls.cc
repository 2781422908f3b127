#include "k8s_client/h2_tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"

namespace onequeue::k8s::internal {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr MemBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

absl::Status TlsConfigError(const std::string& where, absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("TLS verification of ", where, " failed: ", what, ": ", SslErrors("no detail"),
                   " (check certificate-authority / client certificate in the config)"));
}

// Every certificate of `pem` into the context's trust store; at least one.
absl::Status AddCaPem(SSL_CTX* ctx, const std::string& pem, const std::string& where) {
  BioPtr bio = MemBio(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) == 1) ++added;
    X509_free(cert);
  }
  ERR_clear_error();  // the loop ends on "no start line"
  if (added == 0) return TlsConfigError(where, "no CA certificate in certificate-authority-data");
  return absl::OkStatus();
}

absl::Status UseTrust(SSL_CTX* ctx, const TransportConfig& config, const std::string& where) {
  if (config.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return absl::OkStatus();
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!config.ca_pem.empty()) return AddCaPem(ctx, config.ca_pem, where);
  if (!config.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, config.ca_file.c_str(), nullptr) != 1) {
      return TlsConfigError(where, absl::StrCat("cannot load CA file ", config.ca_file));
    }
    return absl::OkStatus();
  }
  if (SSL_CTX_set_default_verify_paths(ctx) != 1) return TlsConfigError(where, "no system CA paths");
  return absl::OkStatus();
}

absl::Status UseClientCert(SSL_CTX* ctx, const TransportConfig& config, const std::string& where) {
  if (!config.client_cert_pem.empty()) {
    BioPtr bio = MemBio(config.client_cert_pem);
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    const bool ok = cert && SSL_CTX_use_certificate(ctx, cert) == 1;
    X509_free(cert);
    if (!ok) return TlsConfigError(where, "bad client-certificate-data");
    while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      if (SSL_CTX_add_extra_chain_cert(ctx, extra) != 1) X509_free(extra);  // owned on success
    }
    ERR_clear_error();
  } else if (!config.client_cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, config.client_cert_file.c_str()) != 1) {
      return TlsConfigError(where, absl::StrCat("cannot load client certificate ", config.client_cert_file));
    }
  }
  if (!config.client_key_pem.empty()) {
    BioPtr bio = MemBio(config.client_key_pem);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    const bool ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1;
    EVP_PKEY_free(key);
    if (!ok) return TlsConfigError(where, "bad client-key-data");
  } else if (!config.client_key_file.empty()) {
    if (SSL_CTX_use_PrivateKey_file(ctx, config.client_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return TlsConfigError(where, absl::StrCat("cannot load client key ", config.client_key_file));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string SslErrors(const char* fallback) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? fallback : out;
}

absl::StatusOr<SslCtxPtr> NewClientSslContext(const TransportConfig& config, const std::string& where) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return absl::InternalError(absl::StrCat("SSL_CTX_new: ", SslErrors("failed")));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn);  // 0 on success (sic)
  if (absl::Status s = UseTrust(ctx.get(), config, where); !s.ok()) return s;
  if (absl::Status s = UseClientCert(ctx.get(), config, where); !s.ok()) return s;
  return ctx;
}

absl::StatusOr<SSL*> NewClientSsl(SSL_CTX* ctx, int fd, const std::string& host, bool verify) {
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return absl::InternalError(absl::StrCat("SSL_new: ", SslErrors("failed")));
  SSL_set_fd(ssl, fd);
  SSL_set_connect_state(ssl);
  in6_addr addr;
  const bool is_ip = inet_pton(AF_INET, host.c_str(), &addr) == 1 || inet_pton(AF_INET6, host.c_str(), &addr) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(ssl, host.c_str());
  if (verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    if (ok != 1) {
      SSL_free(ssl);
      return absl::InternalError(absl::StrCat("cannot set the TLS peer name ", host));
    }
  }
  return ssl;
}

absl::Status CheckNegotiatedH2(SSL* ssl, const std::string& where) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &len);
  if (len == 2 && proto[0] == 'h' && proto[1] == '2') return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(where, ": the server did not select HTTP/2 by ALPN (",
                   len ? std::string(reinterpret_cast<const char*>(proto), len) : "no protocol",
                   "); the nghttp2 client speaks only HTTP/2 (kubernetes.httpClient: curl for HTTP/1.1)"));
}

absl::Status HandshakeError(SSL* ssl, const std::string& where) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return absl::FailedPreconditionError(
        absl::StrCat("TLS verification of ", where, " failed: SSL certificate problem: ",
                     X509_verify_cert_error_string(verify),
                     " (check certificate-authority / client certificate in the config)"));
  }
  return absl::UnavailableError(absl::StrCat(where, ": TLS handshake failed: ", SslErrors("connection closed")));
}

}  // namespace onequeue::k8s::internal
