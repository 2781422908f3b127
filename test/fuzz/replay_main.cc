// Driver that turns a libFuzzer target into a deterministic unit test when the build is not a
// fuzzing build: every file of the corpus folders given on the command line is fed to the target,
// then a bounded number of inputs derived from them (truncations, byte flips, splices) with a
// fixed seed. A crash or sanitizer report fails the test; so does a corpus path that does not
// exist or holds no file (a typo would otherwise turn the test into runs of the empty input and
// pass); the exit code is 0 otherwise.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
// The corpus files; false (with the reason on stderr) when no path is given, a path does not
// exist, or a path holds no file.
bool ReadCorpus(int argc, char** argv, std::vector<std::string>* inputs) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return false;
  }
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "corpus path %s does not exist\n", argv[i]);
      return false;
    }
    if (files.empty()) {
      std::fprintf(stderr, "corpus path %s holds no file\n", argv[i]);
      return false;
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      inputs->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  return true;
}

void Run(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> corpus;
  if (!ReadCorpus(argc, argv, &corpus)) return 2;
  for (const auto& s : corpus) Run(s);
  std::mt19937_64 rng(20261121);
  constexpr int kMutations = 20000;
  for (int i = 0; i < kMutations; ++i) {
    std::string s = corpus[rng() % corpus.size()];
    switch (rng() % 4) {
      case 0:  // truncate
        if (!s.empty()) s.resize(rng() % s.size());
        break;
      case 1:  // flip bytes
        for (int k = 0; k < 4 && !s.empty(); ++k) s[rng() % s.size()] = static_cast<char>(rng());
        break;
      case 2: {  // splice two inputs
        const std::string& o = corpus[rng() % corpus.size()];
        s = s.substr(0, s.empty() ? 0 : rng() % s.size()) + o.substr(o.empty() ? 0 : rng() % o.size());
        break;
      }
      default:  // insert structural characters parsers care about
        if (!s.empty()) s.insert(rng() % s.size(), std::string(1, "{}[]\",:\n0-.e\\"[rng() % 14]));
    }
    Run(s);
  }
  std::printf("replayed %zu corpus inputs and %d mutations: no crash\n", corpus.size(), kMutations);
  return 0;
}
