// The records a `loom conformance` child writes to its parent, one JSON
// object per line (conformance_cli.hpp). Both ends are this binary, so the
// format needs no version; a line that does not parse is a child that died
// mid-write or wrote garbage, and the parent treats it as no record.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "conformance_cli/conformance_cli.hpp"

namespace loom::cli {
namespace {

namespace conf = loom::conformance;

const conf::Outcome kOutcomes[] = {conf::Outcome::kPassed, conf::Outcome::kFailed, conf::Outcome::kSkipped,
                                   conf::Outcome::kNotClaimed};

std::string line(const Json& j) { return json_text(j) + "\n"; }

Json row_json(const conf::Row& r) {
  // JSON has no infinity: null stands for it (a NaN result's ratio).
  Json worst = std::isfinite(r.worst) ? Json(r.worst) : Json(nullptr);
  return Json{{"op", r.op}, {"types", r.types}, {"graphs", r.graphs}, {"claimed", r.claimed},
              {"passed", r.passed}, {"worst", worst}};
}

conf::Row row_from(const Json& j) {
  conf::Row r;
  r.op = j.at("op").get<std::string>();
  r.types = j.at("types").get<std::string>();
  r.graphs = j.at("graphs").get<int>();
  r.claimed = j.at("claimed").get<int>();
  r.passed = j.at("passed").get<int>();
  r.worst = j.at("worst").is_null() ? std::numeric_limits<double>::infinity() : j.at("worst").get<double>();
  return r;
}

conf::CaseResult case_from(const Json& j) {
  conf::CaseResult c;
  c.suite = j.at("suite").get<std::string>();
  c.name = j.at("name").get<std::string>();
  const std::string outcome = j.at("outcome").get<std::string>();
  bool known = false;
  for (conf::Outcome o : kOutcomes) {
    if (outcome == conf::outcome_name(o)) c.outcome = o, known = true;
  }
  if (!known) throw std::runtime_error("unknown outcome '" + outcome + "'");
  c.skip_reason = j.at("skip_reason").get<std::string>();
  c.runs = j.at("runs").get<int>();
  c.claimed_runs = j.at("claimed_runs").get<int>();
  c.unclaimed = j.at("unclaimed").get<std::vector<std::string>>();
  for (const Json& f : j.at("failures")) {
    c.failures.push_back(
        conf::Failure{f.at("file").get<std::string>(), f.at("line").get<int>(), f.at("message").get<std::string>()});
  }
  return c;
}

}  // namespace

std::string begin_record(const conf::CaseInfo& info) { return line(Json{{"begin", info.suite + "." + info.name}}); }

std::string case_record(const conf::CaseResult& c, const std::map<std::pair<std::string, std::string>, conf::Row>& rows) {
  Json jc{{"suite", c.suite},
          {"name", c.name},
          {"outcome", conf::outcome_name(c.outcome)},
          {"skip_reason", c.skip_reason},
          {"runs", c.runs},
          {"claimed_runs", c.claimed_runs},
          {"unclaimed", c.unclaimed},
          {"failures", Json::array()}};
  for (const conf::Failure& f : c.failures) {
    jc["failures"].push_back(Json{{"file", f.file}, {"line", f.line}, {"message", f.message}});
  }
  Json jr = Json::array();
  for (const auto& kv : rows) jr.push_back(row_json(kv.second));
  return line(Json{{"case", std::move(jc)}, {"rows", std::move(jr)}});
}

std::string error_record(const std::string& message) { return line(Json{{"error", message}}); }

std::string done_record() { return line(Json{{"done", true}}); }

WireRecord parse_record(const std::string& text) {
  WireRecord r;
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    r.text = "not a JSON object";
    return r;
  }
  try {
    if (j.contains("begin")) {
      r.text = j.at("begin").get<std::string>();
      r.kind = WireRecord::Kind::kBegin;
    } else if (j.contains("case")) {
      r.result = case_from(j.at("case"));
      for (const Json& row : j.at("rows")) r.rows.push_back(row_from(row));
      r.kind = WireRecord::Kind::kCase;
    } else if (j.contains("error")) {
      r.text = j.at("error").get<std::string>();
      r.kind = WireRecord::Kind::kError;
    } else if (j.contains("done")) {
      r.kind = WireRecord::Kind::kDone;
    } else {
      r.text = "no known key";
    }
  } catch (const std::exception& e) {
    r = WireRecord();
    r.text = e.what();
  }
  return r;
}

void merge_rows(const std::vector<conf::Row>& rows, std::map<std::pair<std::string, std::string>, conf::Row>* into) {
  for (const conf::Row& r : rows) {
    conf::Row& t = (*into)[{r.op, r.types}];
    t.op = r.op;
    t.types = r.types;
    t.graphs += r.graphs;
    t.claimed += r.claimed;
    t.passed += r.passed;
    t.worst = std::max(t.worst, r.worst);
  }
}

}  // namespace loom::cli
