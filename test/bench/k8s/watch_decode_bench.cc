// What decoding a pod's watch events costs (issue 26: "decode watch events without building a
// DOM where it pays"). The fixture is one pod's three events as a real kube-apiserver v1.37 sent
// them (created, bound by kube-scheduler, Running under kwok): test/bench/k8s/pod_watch_events.jsonl.
// Rows: the informer's whole path (simdjson's DOM + Pod::FromSimdjson since issue 26's decoder;
// before it, nlohmann's DOM + Pod::FromJson), the halves alone, a DOM parse that skips
// metadata.managedFields with nlohmann's SAX interface, and simdjson's two APIs alone. docs/k8s_client.md "Decoding watch events" has the figures.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "k8s_client/models.h"
#include "k8s_client/watch_decoder.h"
#include "nlohmann/json.hpp"
#include <simdjson.h>

#include "k8s_client/simdjson_document.h"

namespace onequeue::k8s {

using nlohmann::json;

std::vector<std::string> Events() {
  std::ifstream in(ONEQUEUE_WATCH_FIXTURE);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

int64_t Bytes(const std::vector<std::string>& lines) {
  int64_t n = 0;
  for (const std::string& l : lines) n += static_cast<int64_t>(l.size()) + 1;
  return n;
}

void Count(benchmark::State& state, const std::vector<std::string>& lines) {
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
  state.SetBytesProcessed(state.iterations() * Bytes(lines));
}

// What Informer<Pod> does per event since issue 26: the watch decoder reads the line with
// simdjson's DOM (one parser, reused) and Pod::FromSimdjson decodes the object.
void BM_InformerPath(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  std::vector<std::string> framed;
  for (const std::string& l : lines) framed.push_back(l + "\n");
  size_t pods = 0;
  WatchDecoder decoder([](WatchEvent) { std::abort(); },  // every event here takes the simdjson path
                       [&](WatchEventType, const simdjson::dom::element& object, std::string_view) {
                         absl::StatusOr<Pod> pod = Pod::FromSimdjson(object);
                         pods += pod.ok();
                         benchmark::DoNotOptimize(pod);
                       });
  for (auto _ : state) {
    for (const std::string& l : framed) benchmark::DoNotOptimize(decoder.Feed(l));
  }
  if (pods != lines.size() * state.iterations()) state.SkipWithError("a pod did not decode");
  Count(state, lines);
}

// What Informer<Pod> did per event before (and what every other informer still does): nlohmann's
// DOM, then Pod::FromJson.
void BM_NlohmannPath(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  for (auto _ : state) {
    for (const std::string& l : lines) {
      absl::StatusOr<WatchEvent> ev = ParseWatchEventLine(l);
      absl::StatusOr<Pod> pod = Pod::FromJson(ev->object);
      benchmark::DoNotOptimize(pod);
    }
  }
  Count(state, lines);
}

// Pod::FromSimdjson alone, from documents parsed beforehand (one parser per event).
void BM_PodFromSimdjson(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  std::vector<std::unique_ptr<SimdjsonDocument>> documents;
  std::vector<simdjson::dom::element> objects;
  for (const std::string& l : lines) {
    documents.push_back(std::make_unique<SimdjsonDocument>());
    objects.push_back((*documents.back()->Parse(l))["object"].value_unsafe());
  }
  for (auto _ : state) {
    for (const simdjson::dom::element& o : objects) benchmark::DoNotOptimize(Pod::FromSimdjson(o));
  }
  Count(state, lines);
}

void BM_ParseToDom(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  for (auto _ : state) {
    for (const std::string& l : lines) benchmark::DoNotOptimize(ParseWatchEventLine(l));
  }
  Count(state, lines);
}

void BM_PodFromDom(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  std::vector<json> objects;
  for (const std::string& l : lines) objects.push_back(ParseWatchEventLine(l)->object);
  for (auto _ : state) {
    for (const json& o : objects) benchmark::DoNotOptimize(Pod::FromJson(o));
  }
  Count(state, lines);
}

// The DOM parser, but the value of every "managedFields" key is lexed and dropped, never built.
class SkipManagedFields {
 public:
  explicit SkipManagedFields(json* root) : dom_(*root, /*allow_exceptions=*/false) {}
  bool null() { return skip_ > 0 || dom_.null(); }
  bool boolean(bool v) { return skip_ > 0 || dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return skip_ > 0 || dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return skip_ > 0 || dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const std::string& s) { return skip_ > 0 || dom_.number_float(v, s); }
  bool string(std::string& v) { return skip_ > 0 || dom_.string(v); }
  bool binary(json::binary_t& v) { return skip_ > 0 || dom_.binary(v); }
  bool start_object(std::size_t n) { return Open() || dom_.start_object(n); }
  bool start_array(std::size_t n) { return Open() || dom_.start_array(n); }
  bool end_object() { return Close() || dom_.end_object(); }
  bool end_array() { return Close() || dom_.end_array(); }
  bool key(std::string& k) {
    if (skip_ > 0) return true;
    if (k == "managedFields") {
      armed_ = true;  // always an array: its start opens the skip
      return true;
    }
    return dom_.key(k);
  }
  bool parse_error(std::size_t at, const std::string& token, const nlohmann::detail::exception& e) {
    return dom_.parse_error(at, token, e);
  }

 private:
  bool Open() {
    if (skip_ > 0 || armed_) {
      armed_ = false;
      ++skip_;
      return true;
    }
    return false;
  }
  bool Close() {
    if (skip_ == 0) return false;
    --skip_;
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int skip_ = 0;
  bool armed_ = false;
};

void BM_ParseToDomWithoutManagedFields(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  for (auto _ : state) {
    for (const std::string& l : lines) {
      json j;
      SkipManagedFields handler(&j);
      json::sax_parse(l, &handler);
      benchmark::DoNotOptimize(j);
    }
  }
  Count(state, lines);
}

// simdjson 3.0's DOM, every value visited, and its On-Demand API reading the fields
// Pod::FromJson reads most (metadata, spec.nodeName and containers' resources, status): what the
// two ways of reading with simdjson cost before the decoder was built (the decision's figures).
size_t Walk(simdjson::dom::element e) {
  size_t n = 1;
  if (e.is_object()) {
    for (auto [k, v] : simdjson::dom::object(e)) n += k.size() + Walk(v);
  } else if (e.is_array()) {
    for (simdjson::dom::element v : simdjson::dom::array(e)) n += Walk(v);
  }
  return n;
}

void BM_SimdjsonDomEveryValue(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  std::vector<simdjson::padded_string> padded(lines.begin(), lines.end());
  simdjson::dom::parser parser;
  for (auto _ : state) {
    for (const simdjson::padded_string& l : padded) benchmark::DoNotOptimize(Walk(parser.parse(l)));
  }
  Count(state, lines);
}

size_t Strings(simdjson::ondemand::value v) {
  size_t n = 0;
  for (auto field : v.get_object()) n += std::string_view(field.value().get_string()).size();
  return n;
}

size_t PodFields(simdjson::ondemand::object pod) {
  size_t n = 0;
  for (auto part : pod) {
    const std::string_view name = part.unescaped_key();
    if (name == "metadata") {
      for (auto f : part.value().get_object()) {
        const std::string_view k = f.unescaped_key();
        if (k == "labels" || k == "annotations") n += Strings(f.value());
        else if (k == "name" || k == "namespace" || k == "uid" || k == "resourceVersion") n += std::string_view(f.value().get_string()).size();
      }
    } else if (name == "spec") {
      for (auto f : part.value().get_object()) {
        const std::string_view k = f.unescaped_key();
        if (k == "nodeName" || k == "schedulerName") n += std::string_view(f.value().get_string()).size();
        if (k != "containers") continue;
        for (auto c : f.value().get_array()) {
          for (auto cf : c.get_object()) {
            if (cf.unescaped_key() != std::string_view("resources")) continue;
            for (auto kind : cf.value().get_object()) n += Strings(kind.value());
          }
        }
      }
    } else if (name == "status") {
      for (auto f : part.value().get_object()) {
        if (f.unescaped_key() == std::string_view("phase")) n += std::string_view(f.value().get_string()).size();
      }
    }
  }
  return n;
}

void BM_SimdjsonOnDemandPodFields(benchmark::State& state) {
  const std::vector<std::string> lines = Events();
  std::vector<simdjson::padded_string> padded(lines.begin(), lines.end());
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    for (const simdjson::padded_string& l : padded) {
      simdjson::ondemand::document doc = parser.iterate(l);
      size_t n = 0;
      for (auto field : doc.get_object()) {
        if (field.unescaped_key() == std::string_view("object")) n += PodFields(field.value().get_object());
      }
      benchmark::DoNotOptimize(n);
    }
  }
  Count(state, lines);
}

}  // namespace onequeue::k8s


// Registered here so that ONEQUEUE_BENCH_ITERATIONS=N runs each row exactly N iterations in one
// call (what a per-event instruction count under callgrind needs: no calibration calls).
int main(int argc, char** argv) {
  using Row = void (*)(benchmark::State&);
  const std::pair<const char*, Row> rows[] = {
      {"BM_InformerPath", onequeue::k8s::BM_InformerPath},
      {"BM_NlohmannPath", onequeue::k8s::BM_NlohmannPath},
      {"BM_PodFromSimdjson", onequeue::k8s::BM_PodFromSimdjson},
      {"BM_ParseToDom", onequeue::k8s::BM_ParseToDom},
      {"BM_PodFromDom", onequeue::k8s::BM_PodFromDom},
      {"BM_ParseToDomWithoutManagedFields", onequeue::k8s::BM_ParseToDomWithoutManagedFields},
      {"BM_SimdjsonDomEveryValue", onequeue::k8s::BM_SimdjsonDomEveryValue},
      {"BM_SimdjsonOnDemandPodFields", onequeue::k8s::BM_SimdjsonOnDemandPodFields},
  };
  const char* fixed = std::getenv("ONEQUEUE_BENCH_ITERATIONS");
  for (const auto& [name, row] : rows) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, row);
    if (fixed != nullptr) b->Iterations(std::atoll(fixed));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
