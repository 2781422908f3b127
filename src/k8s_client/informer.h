// List+watch informers, like client-go's reflector + store + handlers.
//
// One thread per informer runs:   list (pages of `page_size`, limit/continue)
//                                   -> replace the store (diffed: handlers fire only for changes)
//                                   -> watch from the list's resourceVersion, with bookmarks
//                                   -> on a clean end / connection error: re-watch from the last
//                                      resourceVersion seen, after backoff with jitter
//                                   -> on 410 Gone / Expired / "too old resource version": relist
//                                   -> on a backlog of unhandled events past the bound: relist
// Handlers run on the informer's thread, with no lock held, in event order; they may call the API
// (synchronously) but should not block long: events queue up behind them.
// Each change reaches the handlers once: a relist emits add/update/delete only for objects whose
// resourceVersion differs from the store's.
#pragma once

#include <atomic>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/simdjson_document.h"
#include "k8s_client/watch_decoder.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace onequeue::k8s {

struct InformerOptions {
  std::string namespace_;  // empty: all namespaces
  std::string label_selector, field_selector;
  int64_t page_size = 500;
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(10);
  // The server ends each watch after a random time in [min, 2*min), as client-go does.
  absl::Duration min_watch_timeout = absl::Minutes(5);
  // Bytes of a watch received and not handled yet: past this the watch ends with
  // ResourceExhausted and the informer relists (the events dropped are in the new list).
  size_t max_backlog_bytes = kDefaultMaxResponseBytes;
};

struct InformerStats {
  int64_t lists = 0;          // full lists (the first one and every relist)
  int64_t pages = 0;          // list requests (pages) answered
  int64_t watches = 0;        // watch requests opened
  int64_t expired = 0;        // 410 Gone / Expired seen
  int64_t events = 0;         // watch events applied (not counting bookmarks)
  int64_t bookmarks = 0;
  int64_t decode_errors = 0;  // objects that failed to parse (skipped)
  int64_t backlog_overflows = 0;  // watches ended because their backlog passed the bound
};

// The list/watch loop, independent of the object type.
class InformerBase {
 public:
  // `simdjson`: the derived class decodes from simdjson's DOM (ListItemFast, ApplyFast); list
  // pages and watch events are then read with simdjson, and with nlohmann only where simdjson
  // refuses the text (issue 26).
  InformerBase(RestClient* client, ResourceType type, InformerOptions options, bool simdjson = false);
  virtual ~InformerBase();
  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;

  void Start();
  // Returns promptly: cancels the watch or list in flight and joins the thread.
  void Stop();
  bool HasSynced() const { return synced_.load(); }
  bool WaitForSync(absl::Duration timeout);
  std::string LastResourceVersion() const ABSL_LOCKS_EXCLUDED(mu_);
  InformerStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  // A full list, page by page: BeginList, the items (decoded at once, the pages' JSON is not
  // kept), then EndList replaces the store and returns how many items were skipped as
  // unparseable. A list that fails midway is begun again.
  virtual void BeginList() = 0;
  virtual void ListItem(const nlohmann::json& item) = 0;
  virtual void ListItemFast(const simdjson::dom::element& item) = 0;  // only with `simdjson`
  virtual int EndList() = 0;
  // Applies one event; false when the object failed to parse.
  virtual bool Apply(WatchEventType type, const nlohmann::json& object) = 0;
  virtual bool ApplyFast(WatchEventType type, const simdjson::dom::element& object) = 0;  // with `simdjson`

 private:
  void Run();
  absl::Status ListAll();       // list pages, then EndList
  // One page's items to ListItem(Fast); its resourceVersion and continue token.
  absl::Status ReadPage(const std::string& body, SimdjsonDocument* document, std::string* list_rv,
                        std::string* continue_token);
  // After a watch event: the counters and the last resourceVersion.
  void Record(WatchEventType type, bool decoded, std::string_view resource_version) ABSL_LOCKS_EXCLUDED(mu_);
  // One watch request until it ends; `relist`: events were dropped (the backlog or a line passed
  // its bound), so only a new list is correct.
  absl::Status WatchOnce(bool* relist);
  absl::StatusOr<std::string> Fetch(const std::string& path);  // cancellable GET
  bool Stopping() const;
  void SleepUnlessStopped(absl::Duration d);

  RestClient* client_;
  const ResourceType type_;
  const InformerOptions options_;
  const bool simdjson_;
  std::atomic<bool> synced_{false};
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  HttpStream* stream_ ABSL_GUARDED_BY(mu_) = nullptr;
  InformerStats stats_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
struct InformerHandlers {
  std::function<void(const T&)> on_add;
  std::function<void(const T& old_obj, const T& new_obj)> on_update;
  std::function<void(const T&)> on_delete;
};

// A model that also decodes from simdjson's DOM (Pod, Node): its informer reads with simdjson.
template <typename T>
concept DecodesSimdjson = requires(const simdjson::dom::element& e) {
  { T::FromSimdjson(e) } -> std::same_as<absl::StatusOr<T>>;
};

// T has `ObjectMeta metadata` and `static absl::StatusOr<T> FromJson(const nlohmann::json&)`,
// and may have `FromSimdjson` (DecodesSimdjson).
template <typename T>
class Informer : public InformerBase {
 public:
  Informer(RestClient* client, ResourceType type, InformerOptions options,
           InformerHandlers<T> handlers = {})
      : InformerBase(client, std::move(type), std::move(options), DecodesSimdjson<T>),
        handlers_(std::move(handlers)) {}
  ~Informer() override { Stop(); }

  std::optional<T> Get(const std::string& key) const {
    absl::MutexLock lock(&store_mu_);
    auto it = store_.find(key);
    if (it == store_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<T> List() const {
    absl::MutexLock lock(&store_mu_);
    std::vector<T> out;
    out.reserve(store_.size());
    for (const auto& [k, v] : store_) out.push_back(v);
    return out;
  }
  size_t Size() const {
    absl::MutexLock lock(&store_mu_);
    return store_.size();
  }

 protected:
  void BeginList() override {
    listed_.clear();
    list_skipped_ = 0;
  }
  void ListItem(const nlohmann::json& item) override { Keep(T::FromJson(item)); }
  void ListItemFast(const simdjson::dom::element& item) override {
    if constexpr (DecodesSimdjson<T>) Keep(T::FromSimdjson(item));
  }

  int EndList() override {
    absl::flat_hash_map<std::string, T> fresh = std::exchange(listed_, {});
    std::vector<T> added, deleted;
    std::vector<std::pair<T, T>> updated;
    {
      absl::MutexLock lock(&store_mu_);
      for (const auto& [key, obj] : fresh) {
        auto it = store_.find(key);
        if (it == store_.end()) {
          added.push_back(obj);
        } else if (it->second.metadata.resource_version != obj.metadata.resource_version) {
          updated.emplace_back(it->second, obj);
        }
      }
      for (const auto& [key, obj] : store_) {
        if (!fresh.contains(key)) deleted.push_back(obj);
      }
      store_ = std::move(fresh);
    }
    for (const T& o : added) if (handlers_.on_add) handlers_.on_add(o);
    for (const auto& [o, n] : updated) if (handlers_.on_update) handlers_.on_update(o, n);
    for (const T& o : deleted) if (handlers_.on_delete) handlers_.on_delete(o);
    return list_skipped_;
  }

  bool Apply(WatchEventType type, const nlohmann::json& object) override { return Store(type, T::FromJson(object)); }
  bool ApplyFast(WatchEventType type, const simdjson::dom::element& object) override {
    if constexpr (DecodesSimdjson<T>) return Store(type, T::FromSimdjson(object));
    return false;
  }

 private:
  // One listed item, into the list being read (the informer's thread only).
  void Keep(absl::StatusOr<T> obj) {
    if (!obj.ok()) {
      spdlog::warn("informer: skipping an object that does not parse: {}", std::string(obj.status().message()));
      ++list_skipped_;
      return;
    }
    std::string key = obj->metadata.Key();
    listed_.insert_or_assign(std::move(key), *std::move(obj));
  }

  bool Store(WatchEventType type, absl::StatusOr<T> obj) {
    if (!obj.ok()) {
      spdlog::warn("informer: skipping an event whose object does not parse: {}", std::string(obj.status().message()));
      return false;
    }
    const std::string key = obj->metadata.Key();
    std::optional<T> old;
    {
      absl::MutexLock lock(&store_mu_);
      auto it = store_.find(key);
      if (it != store_.end()) old = std::move(it->second);
      if (type == WatchEventType::kDeleted) {
        if (it != store_.end()) store_.erase(it);
      } else {
        store_.insert_or_assign(key, *obj);
      }
    }
    if (type == WatchEventType::kDeleted) {
      if (old && handlers_.on_delete) handlers_.on_delete(*obj);
    } else if (old) {
      if (handlers_.on_update) handlers_.on_update(*old, *obj);
    } else if (handlers_.on_add) {
      handlers_.on_add(*obj);
    }
    return true;
  }

  const InformerHandlers<T> handlers_;
  absl::flat_hash_map<std::string, T> listed_;  // the list being read
  int list_skipped_ = 0;
  mutable absl::Mutex store_mu_;
  absl::flat_hash_map<std::string, T> store_ ABSL_GUARDED_BY(store_mu_);
};

}  // namespace onequeue::k8s
