#include "registry/probe_record.hpp"

#include <cstdlib>
#include <sstream>

namespace loom::registry {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char n = s[++i];
    out += n == 'n' ? '\n' : n == 'r' ? '\r' : n;
  }
  return out;
}

const Stage kStages[] = {Stage::kFound, Stage::kOpened, Stage::kNegotiated, Stage::kProbed, Stage::kReady};
const Fate kFates[] = {Fate::kReady, Fate::kUnavailable, Fate::kFailed, Fate::kSkipped};

}  // namespace

namespace {

// Candidate and ProbeRecord name their outcome fields alike.
template <typename From, typename To>
void copy_outcome(const From& from, To* to) {
  to->stage = from.stage;
  to->fate = from.fate;
  to->reason = from.reason;
  to->abi_version = from.abi_version;
  to->score = from.score;
  to->plugin_version = from.plugin_version;
}

}  // namespace

void record_outcome(const Candidate& from, ProbeRecord* to) { copy_outcome(from, to); }
void apply_outcome(const ProbeRecord& from, Candidate* to) { copy_outcome(from, to); }

std::string format_probe_step(const char* step) { return std::string("step ") + step + "\n"; }
std::string format_probe_input(const std::string& input) { return "input " + escape(input) + "\n"; }

std::string format_probe_record(const ProbeRecord& r) {
  std::ostringstream o;
  o << "finished " << (r.finished ? 1 : 0) << "\n";
  if (!r.failure.empty()) o << "failure " << escape(r.failure) << "\n";
  if (!r.step.empty()) o << "step " << escape(r.step) << "\n";
  o << "stage " << stage_name(r.stage) << "\n";
  o << "fate " << fate_name(r.fate) << "\n";
  if (!r.reason.empty()) o << "reason " << escape(r.reason) << "\n";
  o << "abi " << r.abi_version << "\n";
  o << "score " << r.score << "\n";
  if (!r.plugin_version.empty()) o << "version " << escape(r.plugin_version) << "\n";
  for (const auto& d : r.devices) o << "device " << escape(d) << "\n";
  for (const auto& i : r.inputs) o << format_probe_input(i);
  o << "end\n";
  return o.str();
}

ProbeRecord parse_probe_record(const std::string& text, bool* complete) {
  ProbeRecord r;
  *complete = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? std::string() : unescape(line.substr(sp + 1));
    if (key == "end") {
      *complete = true;
      break;
    }
    if (key == "finished") r.finished = value == "1";
    else if (key == "failure") r.failure = value;
    else if (key == "step") r.step = value;
    else if (key == "reason") r.reason = value;
    else if (key == "version") r.plugin_version = value;
    else if (key == "device") r.devices.push_back(value);
    else if (key == "input") r.inputs.push_back(value);
    else if (key == "abi") r.abi_version = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    else if (key == "score") r.score = static_cast<int32_t>(std::strtol(value.c_str(), nullptr, 10));
    else if (key == "stage") {
      for (Stage s : kStages) if (value == stage_name(s)) r.stage = s;
    } else if (key == "fate") {
      for (Fate f : kFates) if (value == fate_name(f)) r.fate = f;
    }
  }
  return r;
}

}  // namespace loom::registry
