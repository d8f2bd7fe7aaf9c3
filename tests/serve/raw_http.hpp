// A raw HTTP/1.1 client for the serve tests: plain sockets on 127.0.0.1,
// so a test sees exactly the bytes the server sends (chunk framing, SSE
// lines) and can hang up in the middle of a response.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace loom::test {

struct HttpReply {
  int status = 0;                              // 0: no response
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;                            // de-chunked
};

// A request's bytes: Content-Length for a body, Connection: close (the
// server closes after the response, which is how a reply ends here).
inline std::string http_request(const std::string& method, const std::string& path, const std::string& body = "",
                                const std::string& extra_headers = "") {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty() || method == "POST") {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

// One connection.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool send(const std::string& s) {
    size_t off = 0;
    while (fd_ >= 0 && off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return off == s.size();
  }
  // Reads what arrives within timeout_ms (until the server closes, or
  // until `until` appears in everything read so far when not empty).
  std::string read(int timeout_ms, const std::string& until = "") {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (fd_ >= 0 && !eof_) {
      if (!until.empty() && all_.find(until) != std::string::npos) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      all_.append(buf, static_cast<size_t>(n));
    }
    return all_;
  }
  bool closed_by_server() const { return eof_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool eof_ = false;
  std::string all_;
};

// A response's bytes parsed (a chunked body de-chunked).
inline HttpReply parse_reply(const std::string& raw) {
  HttpReply r;
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + 9);
  size_t at = raw.find("\r\n") + 2;
  while (at < head_end) {
    const size_t eol = raw.find("\r\n", at);
    const std::string line = raw.substr(at, eol - at);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      r.headers[name] = line.substr(v);
    }
    at = eol + 2;
  }
  std::string body = raw.substr(head_end + 4);
  if (r.headers["transfer-encoding"] != "chunked") {
    r.body = body;
    return r;
  }
  size_t p = 0;
  while (p < body.size()) {
    const size_t eol = body.find("\r\n", p);
    if (eol == std::string::npos) break;
    const size_t n = std::stoul(body.substr(p, eol - p), nullptr, 16);
    if (n == 0) break;
    r.body += body.substr(eol + 2, n);
    p = eol + 2 + n + 2;
  }
  return r;
}

// One request on a new connection, the whole reply.
inline HttpReply http_exchange(int port, const std::string& request, int timeout_ms = 10000) {
  RawConnection c(port);
  if (!c.ok() || !c.send(request)) return HttpReply{};
  return parse_reply(c.read(timeout_ms));
}

// The "data: ..." payloads of a server-sent-event body, in order.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p < body.size()) {
    const size_t end = body.find("\n\n", p);
    const std::string ev = body.substr(p, end == std::string::npos ? std::string::npos : end - p);
    if (ev.compare(0, 6, "data: ") == 0) out.push_back(ev.substr(6));
    if (end == std::string::npos) break;
    p = end + 2;
  }
  return out;
}

}  // namespace loom::test
