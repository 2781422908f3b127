#include <curl/curl.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "slurm_bridge/rest_client.h"

namespace onequeue::slurm {
namespace {

size_t AppendBody(char* data, size_t size, size_t nmemb, void* out) {
  static_cast<std::string*>(out)->append(data, size * nmemb);
  return size * nmemb;
}

class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(CurlTransportOptions o) : options_(std::move(o)) {
    static std::once_flag init;
    std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle_ = curl_easy_init();
  }
  ~CurlTransport() override { curl_easy_cleanup(handle_); }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& req) override {
    // One handle reused for every call keeps the connection to slurmrestd open between polls.
    absl::MutexLock lock(&mu_);
    CURL* h = handle_;
    curl_easy_reset(h);
    const std::string url = options_.base_url + req.path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    if (!options_.unix_socket.empty()) curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, options_.unix_socket.c_str());
    if (!options_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_file.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(options_.request_timeout)));
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (req.method == "POST") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.c_str());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(req.body.size()));
    } else if (req.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : req.headers) headers = curl_slist_append(headers, absl::StrCat(k, ": ", v).c_str());
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    HttpResponse resp;
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp.body);
    const CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(headers);
    const std::string where = options_.unix_socket.empty() ? options_.base_url
                                                           : absl::StrCat("unix socket ", options_.unix_socket);
    switch (rc) {
      case CURLE_OK:
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
        return resp;
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        return absl::UnavailableError(absl::StrCat("cannot connect to slurmrestd at ", where, ": ",
                                                   curl_easy_strerror(rc), " (is slurmrestd running?)"));
      case CURLE_OPERATION_TIMEDOUT:
        return absl::DeadlineExceededError(absl::StrCat("slurmrestd at ", where, " did not answer ", req.method,
                                                        " ", req.path, " in time"));
      case CURLE_GOT_NOTHING:
      case CURLE_RECV_ERROR:
      case CURLE_SEND_ERROR:
        return absl::UnavailableError(absl::StrCat("connection to slurmrestd at ", where, " failed: ",
                                                   curl_easy_strerror(rc), " (restarting?)"));
      default:
        return absl::InternalError(absl::StrCat("request to slurmrestd at ", where, " failed: ",
                                                curl_easy_strerror(rc)));
    }
  }

 private:
  const CurlTransportOptions options_;
  absl::Mutex mu_;
  CURL* handle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<HttpTransport> MakeCurlTransport(const CurlTransportOptions& options) {
  return std::make_unique<CurlTransport>(options);
}

}  // namespace onequeue::slurm
