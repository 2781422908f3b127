// The two decoders of Pod and Node (issue 26) side by side, as the informer runs them:
//   nlohmann: the text through nlohmann::json, then FromJson (what every caller did before);
//   simdjson: the text through SimdjsonDocument, then FromSimdjson, and where simdjson refuses the
//             text, the nlohmann path (what the informer does with a list item or a watch event).
// Each function returns "" when both give the same outcome (an equal model, or an error with the
// same code and message, or both refuse the text) and a description of the difference otherwise.
// Used by decoder_equivalence_test.cc over every fixture and by the k8s_pod_json_fuzz and
// k8s_watch_event_fuzz targets over their mutations.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "k8s_client/models.h"
#include "k8s_client/simdjson_document.h"
#include "k8s_client/watch_decoder.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s::equivalence {

inline std::string Excerpt(std::string_view text) {
  return std::string(text.substr(0, 200));
}

template <typename T>
std::string SameOutcome(const absl::StatusOr<T>& a, const absl::StatusOr<T>& b, std::string_view text) {
  if (a.ok() != b.ok()) {
    return absl::StrCat("nlohmann: ", a.ok() ? "ok" : a.status().ToString(), "; simdjson: ",
                        b.ok() ? "ok" : b.status().ToString(), "; text: ", Excerpt(text));
  }
  if (!a.ok() && a.status() != b.status()) {
    return absl::StrCat("errors differ: nlohmann ", a.status().ToString(), "; simdjson ", b.status().ToString());
  }
  if (a.ok() && !(*a == *b)) return absl::StrCat("the models differ; text: ", Excerpt(text));
  return "";
}

// One object's text (a list item) through both paths; T is Pod or Node.
template <typename T>
std::string ObjectDecodersDisagree(std::string_view text, SimdjsonDocument& document) {
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  const simdjson::dom::element* root = document.Parse(text);
  if (root == nullptr) return "";  // refused: the nlohmann path runs instead, the same by construction
  if (j.is_discarded()) return absl::StrCat("simdjson accepts a text nlohmann refuses: ", Excerpt(text));
  return SameOutcome(T::FromJson(j), T::FromSimdjson(*root), text);
}

inline std::string PodAndNodeDecodersDisagree(std::string_view text) {
  SimdjsonDocument document;
  if (std::string d = ObjectDecodersDisagree<Pod>(text, document); !d.empty()) return "Pod: " + d;
  if (std::string d = ObjectDecodersDisagree<Node>(text, document); !d.empty()) return "Node: " + d;
  return "";
}

// What a watch stream decodes to: each event's type, resourceVersion and Pod (or the ERROR
// event's status), then the status Feed returned.
struct WatchOutcome {
  std::vector<std::string> events;
  std::vector<absl::StatusOr<Pod>> pods;
  absl::Status status;
};

inline std::string EventLine(WatchEventType type, std::string_view rv) {
  return absl::StrCat(static_cast<int>(type), " rv=", absl::string_view(rv.data(), rv.size()));
}

// The stream through WatchDecoder with the simdjson handler or without, fed in two chunks.
inline WatchOutcome DecodeWatch(std::string_view stream, size_t split, bool simdjson) {
  WatchOutcome out;
  WatchDecoder::Handler slow = [&](WatchEvent ev) {
    if (ev.type == WatchEventType::kError) {
      out.events.push_back(absl::StrCat("ERROR ", WatchErrorStatus(ev).ToString()));
      return;
    }
    out.events.push_back(EventLine(ev.type, ev.resource_version));
    out.pods.push_back(Pod::FromJson(ev.object));
  };
  WatchDecoder::FastHandler fast = [&](WatchEventType type, const simdjson::dom::element& object, std::string_view rv) {
    out.events.push_back(EventLine(type, rv));
    out.pods.push_back(Pod::FromSimdjson(object));
  };
  WatchDecoder decoder = simdjson ? WatchDecoder(slow, fast, 1 << 16) : WatchDecoder(slow, 1 << 16);
  const absl::string_view all(stream.data(), stream.size());
  out.status = decoder.Feed(all.substr(0, split));
  if (out.status.ok()) out.status = decoder.Feed(all.substr(split));
  return out;
}

inline std::string WatchDecodersDisagree(std::string_view stream, size_t split) {
  const WatchOutcome a = DecodeWatch(stream, split, false);
  const WatchOutcome b = DecodeWatch(stream, split, true);
  if (a.status != b.status) {
    return absl::StrCat("watch status: nlohmann ", a.status.ToString(), "; simdjson ", b.status.ToString());
  }
  if (a.events != b.events) return absl::StrCat("watch events differ; stream: ", Excerpt(stream));
  for (size_t i = 0; i < a.pods.size(); ++i) {
    if (std::string d = SameOutcome(a.pods[i], b.pods[i], stream); !d.empty()) return absl::StrCat("event ", i, ": ", d);
  }
  return "";
}

}  // namespace onequeue::k8s::equivalence
