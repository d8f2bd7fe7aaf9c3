// Versions and status objects of the C API.
#include <cstring>

#include "capi/handles.hpp"

namespace loom::capi {
namespace {

// Returned when not even a status can be allocated.
loom_status kOutOfMemory{LOOM_STATUS_RESOURCE_EXHAUSTED, "[loom] out of memory"};

}  // namespace

bool is_static_status(const loom_status_t* st) { return st == &kOutOfMemory; }

loom_status_t* make_status(loom_status_code_t code, const std::string& message) {
  loom_status_t* st = abi_status_new(code, message.c_str());
  return st ? st : &kOutOfMemory;
}

loom_status_t* to_c(const Status& st) {
  if (st.ok()) return nullptr;
  return make_status(static_cast<loom_status_code_t>(st.code()), st.message());
}

loom_status_t* bad_argument(const char* function, const std::string& what) {
  return make_status(LOOM_STATUS_INVALID_ARGUMENT, std::string("[") + function + "] " + what);
}

loom_status_t* from_exception(const char* function, std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, std::string("[") + function + "] out of memory");
  } catch (const std::exception& ex) {
    try {
      return make_status(LOOM_STATUS_INTERNAL, std::string("[") + function + "] unexpected error: " + ex.what());
    } catch (...) {
      return &kOutOfMemory;
    }
  } catch (...) {
    try {
      return make_status(LOOM_STATUS_INTERNAL, std::string("[") + function + "] unexpected error (not a std::exception)");
    } catch (...) {
      return &kOutOfMemory;
    }
  }
}

loom_device_info_t device_record(const registry::Device& d) {
  const registry::DeviceInfo& i = d.info();
  loom_device_info_t r{};
  r.struct_size = sizeof r;
  r.name = i.name.c_str();
  r.description = i.description.c_str();
  r.plugin = i.plugin.c_str();
  r.kind = static_cast<int32_t>(i.type);
  r.emulated = (i.caps & LOOM_DEVICE_CAP_EMULATED) != 0;
  r.memory_total = i.memory_total;
  r.memory_free = i.memory_free;
  r.pci_bus_id = i.pci_bus_id.c_str();
  r.uuid = i.uuid.c_str();
  return r;
}

}  // namespace loom::capi

using namespace loom::capi;

extern "C" {

uint32_t loom_api_version(void) { return LOOM_API_VERSION; }

const char* loom_version_string(void) { return LOOM_VERSION_STRING; }

loom_status_code_t loom_status_code(const loom_status_t* status) { return status ? status->code : LOOM_STATUS_OK; }

const char* loom_status_message(const loom_status_t* status) { return status ? status->message.c_str() : ""; }

const char* loom_status_code_name(loom_status_code_t code) {
  return loom::status_code_name(static_cast<loom::StatusCode>(code));
}

void loom_status_free(loom_status_t* status) {
  if (status && !is_static_status(status)) loom::abi_status_free(status);
}

}  // extern "C"
