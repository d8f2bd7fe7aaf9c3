#include "stream.h"

namespace loom::blas {

Stream::Stream(Device* device, const loom_stream_iface_t* iface) : device_(device) {
  handle_.struct_size = sizeof(handle_);
  handle_.iface = iface;
  handle_.device = device->handle();
  handle_.context = this;
}

}  // namespace loom::blas
