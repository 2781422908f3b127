#include "k8s_client/informer.h"

#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "k8s_client/api_status.h"
#include "k8s_client/simdjson_fields.h"

namespace onequeue::k8s {

InformerBase::InformerBase(RestClient* client, ResourceType type, InformerOptions options, bool simdjson)
    : client_(client), type_(std::move(type)), options_(std::move(options)), simdjson_(simdjson) {}

InformerBase::~InformerBase() {
  // Derived classes call Stop() in their destructor (handlers must not run on a half-destroyed
  // object); this is a safety net.
  Stop();
}

void InformerBase::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
  // "oq-inf-<resource>" (Linux keeps 15 characters): top -H, perf and the wake-up counts of
  // test/bench/k8s/idle_cpu.sh tell the informers apart.
  pthread_setname_np(thread_.native_handle(), absl::StrCat("oq-inf-", type_.resource).substr(0, 15).c_str());
}

void InformerBase::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (stream_) stream_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
}

bool InformerBase::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void InformerBase::SleepUnlessStopped(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
}

bool InformerBase::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!synced_.load()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

std::string InformerBase::LastResourceVersion() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

InformerStats InformerBase::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<std::string> InformerBase::Fetch(const std::string& path) {
  // A list page through the rate-limited, retrying client, waited for in a way Stop() can cut
  // short: the result is dropped if we stop first.
  struct Shared {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<std::string> result ABSL_GUARDED_BY(mu);
  };
  auto shared = std::make_shared<Shared>();
  HttpRequest req;
  req.path = path;
  req.timeout = absl::Seconds(60);
  client_->DoAsync(std::move(req), [shared](absl::StatusOr<std::string> r) {
    absl::MutexLock lock(&shared->mu);
    shared->result = std::move(r);
    shared->done = true;
  });
  while (true) {
    {
      absl::MutexLock lock(&shared->mu);
      if (shared->mu.AwaitWithTimeout(absl::Condition(&shared->done), absl::Milliseconds(50))) {
        return std::move(shared->result);
      }
    }
    if (Stopping()) return absl::CancelledError("informer stopped");
  }
}

namespace {
// A string field of a list's metadata; "" when absent or not a string.
std::string MetaString(const nlohmann::json& meta, const char* key) {
  if (!meta.is_object()) return "";
  auto it = meta.find(key);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : "";
}
std::string MetaString(const simdjson::dom::element& meta, const char* key) {
  const simdjson::dom::element v = json_fields::Field(meta, key);
  return json_fields::IsString(v) ? json_fields::GetString(v) : "";
}
}  // namespace

absl::Status InformerBase::ReadPage(const std::string& body, SimdjsonDocument* document, std::string* list_rv,
                                    std::string* continue_token) {
  const absl::Status not_a_list =
      absl::InternalError(absl::StrCat("list of ", type_.resource, ": not a list object"));
  // simdjson first; nlohmann where simdjson refuses the text (SimdjsonDocument::Parse).
  if (const simdjson::dom::element* page = document ? document->Parse(body) : nullptr) {
    const simdjson::dom::element items = json_fields::Field(*page, "items");
    if (!json_fields::IsArray(items)) return not_a_list;
    for (simdjson::dom::element item : json_fields::Elements(items)) ListItemFast(item);
    const simdjson::dom::element meta = json_fields::Field(*page, "metadata");
    *list_rv = MetaString(meta, "resourceVersion");
    *continue_token = MetaString(meta, "continue");
    return absl::OkStatus();
  }
  const nlohmann::json page = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  const nlohmann::json& items = json_fields::Field(page, "items");
  if (!items.is_array()) return not_a_list;
  for (const nlohmann::json& item : items) ListItem(item);
  const nlohmann::json& meta = json_fields::Field(page, "metadata");
  *list_rv = MetaString(meta, "resourceVersion");
  *continue_token = MetaString(meta, "continue");
  return absl::OkStatus();
}

absl::Status InformerBase::ListAll() {
  std::unique_ptr<SimdjsonDocument> document;  // one parser for every page of this list
  if (simdjson_) document = std::make_unique<SimdjsonDocument>();
  BeginList();
  std::string continue_token;
  std::string list_rv;
  do {
    ListOptions opts;
    opts.label_selector = options_.label_selector;
    opts.field_selector = options_.field_selector;
    opts.limit = options_.page_size;
    opts.continue_token = continue_token;
    absl::StatusOr<std::string> body =
        Fetch(CollectionPath(type_, options_.namespace_) + opts.ToQuery());
    if (!body.ok()) return body.status();
    if (absl::Status s = ReadPage(*body, document.get(), &list_rv, &continue_token); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    ++stats_.pages;
  } while (!continue_token.empty());
  const int skipped = EndList();
  absl::MutexLock lock(&mu_);
  resource_version_ = list_rv;
  ++stats_.lists;
  stats_.decode_errors += skipped;
  return absl::OkStatus();
}

namespace {

// What the transport thread hands a watch: the bytes it received (queued, bounded) and, once the
// stream ends, its status. The transport thread only queues the bytes; the informer's thread
// decodes them and runs the handlers, so a handler may call the API synchronously without
// deadlocking the transport.
struct WatchInbox {
  explicit WatchInbox(size_t max_backlog) : pending(max_backlog) {}
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  WatchBacklog pending ABSL_GUARDED_BY(mu);
  bool Ready() const ABSL_SHARED_LOCKS_REQUIRED(mu) { return done || !pending.empty() || pending.overflowed(); }
};

// Feeds what arrives in `inbox` to `decoder` until the stream ends; returns the stream's status.
// `error` (an ERROR event or a decode error, set by the decoder's handler or here) ends the
// watch: the stream is cancelled once, and what still arrives is dropped. *relist: the error is
// one a re-watch would meet again (a dropped backlog, a line past its bound).
absl::Status PumpWatch(WatchInbox& inbox, WatchDecoder& decoder, HttpStream& stream,
                       const std::string& resource, absl::Status& error, bool* relist) {
  absl::Status result;
  bool cancelled = false;
  while (true) {
    std::string chunk;
    bool done = false;
    {
      absl::MutexLock lock(&inbox.mu);
      // No timeout: every way out arrives through the inbox (data, an overflow, the stream's end,
      // which Stop()'s Cancel() and our own Cancel() below bring promptly). Polling every 100 ms
      // woke each informer 600 times a minute in an idle daemon (informer_wakeup_test).
      inbox.mu.Await(absl::Condition(&inbox, &WatchInbox::Ready));
      chunk = inbox.pending.Take();
      if (inbox.pending.overflowed() && error.ok()) {
        // Events were dropped: this watch cannot go on; the informer relists.
        error = inbox.pending.OverflowError(resource);
        *relist = true;
        chunk.clear();
      }
      done = inbox.done;
      if (done) result = inbox.status;
    }
    if (!chunk.empty() && error.ok()) {
      absl::Status s = decoder.Feed(chunk);
      if (!s.ok()) {
        error = s;
        *relist = IsLimitExceeded(s);  // a line past its bound: re-watching would meet it again
      }
    }
    if (done) break;
    // An ERROR event does not end the HTTP stream by itself: cancel it ourselves.
    if (!error.ok() && !cancelled) {
      stream.Cancel();
      cancelled = true;
    }
  }
  return result;
}

}  // namespace

absl::Status InformerBase::WatchOnce(bool* relist) {
  ListOptions opts;
  opts.label_selector = options_.label_selector;
  opts.field_selector = options_.field_selector;
  opts.watch = true;
  opts.allow_watch_bookmarks = true;
  opts.resource_version = LastResourceVersion();
  const double r = client_->env().rand01 ? client_->env().rand01() : 0.0;
  opts.timeout_seconds = absl::ToInt64Seconds(options_.min_watch_timeout * (1.0 + r));

  auto shared = std::make_shared<WatchInbox>(options_.max_backlog_bytes);
  absl::Status error;  // an ERROR event or a decode error ends this watch with that status
  WatchDecoder::Handler handler = [this, &error](WatchEvent ev) {
    if (!error.ok()) return;
    if (ev.type == WatchEventType::kError) {
      error = WatchErrorStatus(ev);
      return;
    }
    const bool decoded = ev.type == WatchEventType::kBookmark || Apply(ev.type, ev.object);
    Record(ev.type, decoded, ev.resource_version);
  };
  WatchDecoder decoder = simdjson_
      ? WatchDecoder(std::move(handler),
                     [this, &error](WatchEventType type, const simdjson::dom::element& object, std::string_view rv) {
                       if (!error.ok()) return;
                       Record(type, type == WatchEventType::kBookmark || ApplyFast(type, object), rv);
                     })
      : WatchDecoder(std::move(handler));
  std::unique_ptr<HttpStream> stream = client_->Stream(
      CollectionPath(type_, options_.namespace_) + opts.ToQuery(),
      [shared](absl::string_view chunk) {
        absl::MutexLock lock(&shared->mu);
        shared->pending.Append(chunk);  // past the bound: dropped, and the watch ends below
      },
      [shared](absl::Status s) {
        absl::MutexLock lock(&shared->mu);
        shared->status = std::move(s);
        shared->done = true;
      });
  {
    absl::MutexLock lock(&mu_);
    ++stats_.watches;
    stream_ = stream.get();
    if (stopping_) stream_->Cancel();
  }
  const absl::Status result = PumpWatch(*shared, decoder, *stream, type_.resource, error, relist);
  absl::MutexLock lock(&mu_);
  stream_ = nullptr;
  return error.ok() ? result : error;
}

void InformerBase::Record(WatchEventType type, bool decoded, std::string_view resource_version) {
  absl::MutexLock lock(&mu_);
  if (type == WatchEventType::kBookmark) {
    ++stats_.bookmarks;
  } else {
    ++stats_.events;
    if (!decoded) ++stats_.decode_errors;
  }
  if (!resource_version.empty()) resource_version_ = std::string(resource_version);
}

void InformerBase::Run() {
  Backoff backoff(options_.initial_backoff, options_.max_backoff, client_->env().rand01);
  bool need_list = true;
  while (!Stopping()) {
    if (need_list) {
      absl::Status s = ListAll();
      if (Stopping()) break;
      if (!s.ok()) {
        spdlog::warn("informer {}: list failed: {}", type_.resource, std::string(s.message()));
        SleepUnlessStopped(backoff.Next());
        continue;
      }
      need_list = false;
      synced_.store(true);
      backoff.Reset();
    }
    const absl::Time started = absl::Now();
    bool relist = false;
    absl::Status s = WatchOnce(&relist);
    if (Stopping()) break;
    if (IsResourceExpired(s)) {
      spdlog::info("informer {}: {}; relisting", type_.resource, std::string(s.message()));
      {
        absl::MutexLock lock(&mu_);
        ++stats_.expired;
      }
      need_list = true;
      continue;
    }
    if (relist) {
      // The backlog passed its bound (or one event line its own): events were dropped.
      spdlog::warn("informer {}: {}", type_.resource, std::string(s.message()));
      {
        absl::MutexLock lock(&mu_);
        ++stats_.backlog_overflows;
      }
      need_list = true;
      SleepUnlessStopped(backoff.Next());
      continue;
    }
    if (s.ok()) {
      backoff.Reset();  // the server ended the watch (timeoutSeconds): re-watch at once
      continue;
    }
    if (absl::Now() - started > absl::Seconds(30)) backoff.Reset();
    spdlog::warn("informer {}: watch ended: {}", type_.resource, std::string(s.message()));
    SleepUnlessStopped(backoff.Next());
  }
}

}  // namespace onequeue::k8s
