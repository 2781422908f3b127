// Informer<Pod> reads list pages and watch events with simdjson (issue 26), and with nlohmann where
// simdjson refuses the text: over a scripted transport (a paginated list, then one watch), its
// store, handlers and counters are what the nlohmann decoder gives for the same objects.
#include "k8s_client/informer.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "absl/synchronization/mutex.h"
#include "k8s_client/models.h"

namespace onequeue::k8s {
namespace {

// A watch that stays open until cancelled.
class OpenStream : public HttpStream {
 public:
  explicit OpenStream(HttpTransport::StreamDoneCallback done) : done_(std::move(done)) {}
  ~OpenStream() override { Cancel(); }
  void Cancel() override {
    std::call_once(once_, [this] { done_(absl::CancelledError("cancelled")); });
  }

 private:
  HttpTransport::StreamDoneCallback done_;
  std::once_flag once_;
};

// List pages by continue token ("" for the first); the first watch receives `watch_bytes`.
class ListWatchTransport : public HttpTransport {
 public:
  ListWatchTransport(std::map<std::string, std::string> pages, std::string watch_bytes)
      : pages_(std::move(pages)), watch_bytes_(std::move(watch_bytes)) {}
  void SendAsync(HttpRequest request, ResponseCallback done) override {
    std::string token;
    if (size_t at = request.path.find("continue="); at != std::string::npos) {
      token = request.path.substr(at + 9, request.path.find('&', at) - at - 9);
    }
    done(HttpResponse{200, pages_[token], std::nullopt});
  }
  std::unique_ptr<HttpStream> OpenStream(HttpRequest, ChunkCallback on_chunk, StreamDoneCallback on_done) override {
    auto stream = std::make_unique<class OpenStream>(std::move(on_done));
    if (watches_++ == 0) on_chunk(watch_bytes_);
    return stream;
  }

 private:
  std::map<std::string, std::string> pages_;
  std::string watch_bytes_;
  int watches_ = 0;
};

std::string PodJson(const std::string& name, const std::string& rv, const std::string& node = "") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ns","resourceVersion":")" + rv +
         R"(","labels":{"b":"2","a":"1"}},"spec":{"nodeName":")" + node +
         R"(","containers":[{"name":"c","resources":{"requests":{"cpu":0.5,"memory":"1Gi"}}}]}})";
}

Pod Nlohmann(const std::string& text) { return *Pod::FromJson(nlohmann::json::parse(text)); }

TEST(InformerDecodeTest, ListPagesAndWatchEventsGiveTheNlohmannDecodersPods) {
  const std::string bom = "\xEF\xBB\xBF";  // simdjson refuses it: that page or event goes through nlohmann
  std::map<std::string, std::string> pages = {
      {"", R"({"kind":"PodList","metadata":{"resourceVersion":"1","continue":"p2"},"items":[)" + PodJson("a", "1") +
               "," + PodJson("b", "1") + R"(,{"metadata":{"name":5}}]})"},
      {"p2", bom + R"({"kind":"PodList","metadata":{"resourceVersion":"2"},"items":[)" + PodJson("c", "2") + "]}"},
  };
  const std::string watch =
      R"({"type":"MODIFIED","object":)" + PodJson("a", "3", "n1") + "}\n" +
      bom + R"({"type":"ADDED","object":)" + PodJson("d", "4") + "}\n" +
      R"({"type":"DELETED","object":)" + PodJson("b", "5") + "}\n" +
      R"({"type":"MODIFIED","object":{"metadata":{"name":"c","namespace":"ns","resourceVersion":"6"},"spec":{"priority":"x"}}})" "\n"
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"7"}}})" "\n";
  ClientConfig config;
  config.qps = 0;
  RestClient client(config, std::make_unique<ListWatchTransport>(pages, watch));
  absl::Mutex mu;
  std::vector<std::string> seen;
  InformerHandlers<Pod> handlers;
  handlers.on_add = [&](const Pod& p) {
    absl::MutexLock lock(&mu);
    seen.push_back("add " + p.metadata.name);
  };
  handlers.on_update = [&](const Pod&, const Pod& p) {
    absl::MutexLock lock(&mu);
    seen.push_back("update " + p.metadata.name + " on " + p.node_name);
  };
  handlers.on_delete = [&](const Pod& p) {
    absl::MutexLock lock(&mu);
    seen.push_back("delete " + p.metadata.name);
  };
  Informer<Pod> informer(&client, kPods, InformerOptions{}, handlers);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (informer.LastResourceVersion() != "7" && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  informer.Stop();

  EXPECT_EQ(informer.LastResourceVersion(), "7");
  ASSERT_EQ(informer.Size(), 3u);
  EXPECT_EQ(informer.Get("ns/a"), Nlohmann(PodJson("a", "3", "n1")));
  EXPECT_EQ(informer.Get("ns/c"), Nlohmann(PodJson("c", "2")));  // its MODIFIED did not parse
  EXPECT_EQ(informer.Get("ns/d"), Nlohmann(PodJson("d", "4")));
  EXPECT_FALSE(informer.Get("ns/b").has_value());
  EXPECT_EQ(informer.Get("ns/a")->node_name, "n1");
  EXPECT_EQ(informer.Get("ns/a")->metadata.labels.size(), 2u);
  const InformerStats stats = informer.Stats();
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.pages, 2);
  EXPECT_EQ(stats.events, 4);
  EXPECT_EQ(stats.bookmarks, 1);
  EXPECT_EQ(stats.decode_errors, 2);  // the list item named 5, the MODIFIED with a string priority
  absl::MutexLock lock(&mu);
  std::sort(seen.begin(), seen.begin() + 3);  // the list's adds come in the store's order
  EXPECT_EQ(seen, (std::vector<std::string>{"add a", "add b", "add c", "update a on n1", "add d", "delete b"}));
}

}  // namespace
}  // namespace onequeue::k8s
