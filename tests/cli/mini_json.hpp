// A tiny JSON reader for tests: enough to parse `loom ... --json` output.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::test {

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> arr;
  std::map<std::string, Json> obj;

  const Json& operator[](const std::string& k) const {
    static const Json kNullJson;
    auto it = obj.find(k);
    return it == obj.end() ? kNullJson : it->second;
  }
  bool has(const std::string& k) const { return obj.count(k) != 0; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  // Returns false on malformed input (error() says where).
  bool parse(Json* out) {
    ws();
    if (!value(out)) return false;
    ws();
    if (p_ != s_.size()) return fail("trailing characters");
    return true;
  }
  const std::string& error() const { return err_; }

 private:
  bool fail(const char* what) {
    err_ = std::string(what) + " at offset " + std::to_string(p_);
    return false;
  }
  void ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool lit(const char* l) {
    size_t n = std::string(l).size();
    if (s_.compare(p_, n, l) != 0) return false;
    p_ += n;
    return true;
  }
  bool string(std::string* out) {
    if (p_ >= s_.size() || s_[p_] != '"') return fail("expected string");
    ++p_;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c == '\\') {
        if (p_ >= s_.size()) return fail("bad escape");
        char e = s_[p_++];
        switch (e) {
          case 'n': *out += '\n'; break;
          case 't': *out += '\t'; break;
          case 'r': *out += '\r'; break;
          case 'b': *out += '\b'; break;
          case 'f': *out += '\f'; break;
          case 'u': {
            if (p_ + 4 > s_.size()) return fail("bad \\u");
            long cp = std::strtol(s_.substr(p_, 4).c_str(), nullptr, 16);
            p_ += 4;
            if (cp < 0x80) *out += static_cast<char>(cp);
            else *out += '?';
            break;
          }
          default: *out += e;
        }
      } else {
        *out += c;
      }
    }
    if (p_ >= s_.size()) return fail("unterminated string");
    ++p_;
    return true;
  }
  bool value(Json* v) {
    ws();
    if (p_ >= s_.size()) return fail("unexpected end");
    char c = s_[p_];
    if (c == '{') {
      v->kind = Json::Kind::kObject;
      ++p_;
      ws();
      if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
      while (true) {
        ws();
        std::string k;
        if (!string(&k)) return false;
        ws();
        if (p_ >= s_.size() || s_[p_] != ':') return fail("expected ':'");
        ++p_;
        Json child;
        if (!value(&child)) return false;
        v->obj[k] = std::move(child);
        ws();
        if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
        if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->kind = Json::Kind::kArray;
      ++p_;
      ws();
      if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
      while (true) {
        Json child;
        if (!value(&child)) return false;
        v->arr.push_back(std::move(child));
        ws();
        if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
        if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v->kind = Json::Kind::kString;
      return string(&v->str);
    }
    if (lit("true")) { v->kind = Json::Kind::kBool; v->b = true; return true; }
    if (lit("false")) { v->kind = Json::Kind::kBool; v->b = false; return true; }
    if (lit("null")) { v->kind = Json::Kind::kNull; return true; }
    char* end = nullptr;
    v->num = std::strtod(s_.c_str() + p_, &end);
    if (end == s_.c_str() + p_) return fail("unexpected character");
    v->kind = Json::Kind::kNumber;
    p_ = static_cast<size_t>(end - s_.c_str());
    return true;
  }

  const std::string& s_;
  size_t p_ = 0;
  std::string err_;
};

}  // namespace loom::test
