// Reads Trace Event lines from stdin and prints per-name totals: enough
// standard library (regex, maps, streams, algorithms, templates) to give
// clang's front end and optimiser real work to trace.
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Event {
  std::string name;
  char ph = 0;
  double ts = 0;
  double dur = 0;
  std::int64_t tid = 0;
};

template <typename T>
std::optional<T> field(const std::string& line, const std::regex& re) {
  std::smatch m;
  if (!std::regex_search(line, m, re)) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    return m[1].str();
  } else {
    return static_cast<T>(std::stod(m[1].str()));
  }
}

std::optional<Event> parse(const std::string& line) {
  static const std::regex name(R"re("name"\s*:\s*"([^"]*)")re");
  static const std::regex ph(R"re("ph"\s*:\s*"(.)")re");
  static const std::regex ts(R"re("ts"\s*:\s*([-0-9.eE+]+))re");
  static const std::regex dur(R"re("dur"\s*:\s*([-0-9.eE+]+))re");
  static const std::regex tid(R"re("tid"\s*:\s*([0-9]+))re");
  auto p = field<std::string>(line, ph);
  if (!p || p->empty()) return std::nullopt;
  Event e;
  e.ph = (*p)[0];
  e.name = field<std::string>(line, name).value_or("");
  e.ts = field<double>(line, ts).value_or(0);
  e.dur = field<double>(line, dur).value_or(0);
  e.tid = field<std::int64_t>(line, tid).value_or(0);
  return e;
}

struct Total {
  std::size_t count = 0;
  double sum = 0;
};

}  // namespace

int main() {
  std::unordered_map<std::int64_t, std::vector<Event>> open;
  std::map<std::string, Total> totals;
  std::string line;
  while (std::getline(std::cin, line)) {
    auto e = parse(line);
    if (!e) continue;
    switch (e->ph) {
      case 'X':
        totals[e->name].count++;
        totals[e->name].sum += e->dur;
        break;
      case 'B':
        open[e->tid].push_back(*e);
        break;
      case 'E': {
        auto& stack = open[e->tid];
        if (stack.empty()) break;
        auto& t = totals[stack.back().name];
        t.count++;
        t.sum += e->ts - stack.back().ts;
        stack.pop_back();
        break;
      }
      default:
        break;
    }
  }
  std::vector<std::pair<std::string, Total>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.sum > b.second.sum; });
  for (const auto& [name, t] : rows) {
    std::cout << std::setw(40) << std::left << name << std::setw(8) << t.count << std::fixed << std::setprecision(1)
              << t.sum << " us\n";
  }
}
