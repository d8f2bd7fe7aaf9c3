#include "loom/sched/executor.hpp"

#include <string>

#include "common/align.h"
#include "common/op_info.h"
#include "loom/runtime/log.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "loom/runtime/types.hpp"

namespace loom {
namespace {

using common::align_up;
using common::describe_node;
using common::is_view_op;

// Forget placements in `buffer` so the graph can be planned again.
void unplace(const Graph& graph, loom_buffer_t* buffer) {
  if (!buffer) return;
  auto reset = [&](Tensor* t) {
    if (t->buffer == buffer) {
      t->data = nullptr;
      t->buffer = nullptr;
    }
  };
  for (Tensor* t : graph.leafs()) reset(t);
  for (Tensor* t : graph.nodes()) reset(t);
}

}  // namespace

StatusOr<std::unique_ptr<Executor>> Executor::create(registry::Device* device) {
  if (!device) return invalid_argument("[executor.create] device is null");
  std::unique_ptr<Executor> ex(new Executor(device));
  LOOM_ASSIGN_OR_RETURN(ex->stream_, device->create_stream());
  return ex;
}

Status Executor::allocate(Graph& graph) {
  forget_gone_placements(graph);
  for (Tensor* leaf : graph.leafs()) {
    if (!leaf->data) continue;
    if (leaf->buffer) {
      if (!device_->supports_buffer_type(leaf->buffer->buffer_type)) {
        return invalid_argument("[executor.allocate] tensor '" + std::string(leaf->name) +
                                "' lives in a buffer device '" + device_->name() + "' cannot read");
      }
    } else if (!device_->reads_host_pointers()) {
      return invalid_argument("[executor.allocate] tensor '" + std::string(leaf->name) +
                              "' has host data but device '" + device_->name() +
                              "' cannot read host memory");
    }
  }
  unplace(graph, buffer_.raw());
  LOOM_ASSIGN_OR_RETURN(const size_t alignment, registry::buffer_type_alignment(device_->buffer_type()));
  LOOM_ASSIGN_OR_RETURN(AllocPlan plan, GraphAllocator::plan(graph, alignment));
  if (!buffer_ || buffer_.size() < plan.buffer_size) {
    buffer_.reset();
    placement_ = std::make_shared<const int>(0);  // what the old buffer held is gone
    LOOM_ASSIGN_OR_RETURN(buffer_, device_->alloc_buffer(plan.buffer_size));
    LOOM_LOG_DEBUG("executor", "compute buffer on " + device_->name() + ": " +
                                   std::to_string(plan.buffer_size) + " bytes");
  }
  loom_buffer_t* raw = buffer_.raw();
  const std::shared_ptr<const int>& token = placement_;
  LOOM_RETURN_IF_ERROR(GraphAllocator::apply(graph, plan, raw, buffer_.base(), [raw, &token](Tensor* t) {
    t->placed_by = token;
    return registry::buffer_init_tensor(raw, t);
  }));
  allocated_fingerprint_ = graph.fingerprint();
  allocated_ = true;
  return Status();
}

Status Executor::compute(Graph& graph) {
  forget_gone_placements(graph);
  bool placed = allocated_;
  for (Tensor* t : graph.nodes()) placed = placed && t->data != nullptr;
  for (Tensor* t : graph.leafs()) placed = placed && t->data != nullptr;
  if (!placed) LOOM_RETURN_IF_ERROR(allocate(graph));
  const uint64_t fp = graph.fingerprint();
  // A graph of the same structure as the last one checked needs no new check.
  if (!checked_ || fp != checked_fingerprint_) {
    for (Tensor* t : graph.nodes()) {
      if (is_view_op(t->op)) continue;
      if (!device_->supports_op(t)) {
        return unimplemented("[executor.compute] device '" + device_->name() + "' does not support node " +
                             describe_node(t));
      }
    }
    checked_ = true;
    checked_fingerprint_ = fp;
  }
  loom_graph_t g = graph.as_abi(fp);
  Status st = stream_.compute(g);
  if (!st.ok()) return st.with_context("executor.compute on " + device_->name());
  st = stream_.synchronize();
  if (!st.ok()) return st.with_context("executor.compute on " + device_->name());
  return Status();
}

StatusOr<Buffer> allocate_tensors(registry::Device& device, const std::vector<Tensor*>& tensors,
                                  loom_buffer_type_t* buft) {
  if (!buft) buft = device.buffer_type();
  LOOM_ASSIGN_OR_RETURN(const size_t alignment, registry::buffer_type_alignment(buft));
  size_t total = 0;
  std::vector<size_t> offsets;
  for (Tensor* t : tensors) {
    if (!t) return invalid_argument("[executor.allocate_tensors] null tensor");
    if (t->data || t->view_src) {
      return invalid_argument("[executor.allocate_tensors] tensor '" + std::string(t->name) +
                              "' already has memory or is a view");
    }
    LOOM_ASSIGN_OR_RETURN(const size_t size, registry::buffer_type_alloc_size(buft, t));
    offsets.push_back(total);
    if (total + size < total) return invalid_argument("[executor.allocate_tensors] size overflow");
    total = align_up(total + size, alignment);
  }
  LOOM_ASSIGN_OR_RETURN(Buffer buffer, device.alloc_buffer(total, buft));
  char* base = static_cast<char*>(buffer.base());
  for (size_t i = 0; i < tensors.size(); ++i) {
    tensors[i]->data = base + offsets[i];
    tensors[i]->buffer = buffer.raw();
    tensors[i]->placed_by.reset();  // the caller's buffer: no runner's placement to forget
    LOOM_RETURN_IF_ERROR(registry::buffer_init_tensor(buffer.raw(), tensors[i]));
  }
  return buffer;
}

namespace {

Status check_io(const char* op, const Tensor* t, size_t size, size_t offset) {
  if (!t) return invalid_argument(std::string("[") + op + "] tensor is null");
  if (!t->data || !t->buffer) {
    return invalid_argument(std::string("[") + op + "] tensor '" + t->name + "' has no memory yet (allocate first)");
  }
  if (!t->is_contiguous()) {
    return invalid_argument(std::string("[") + op + "] tensor '" + t->name + "' is not contiguous");
  }
  size_t n = t->nbytes();
  if (offset > n || size > n - offset) {
    return invalid_argument(std::string("[") + op + "] tensor '" + t->name + "': range [" +
                            std::to_string(offset) + ", " + std::to_string(offset + size) +
                            ") outside its " + std::to_string(n) + " bytes");
  }
  return Status();
}

}  // namespace

Status tensor_set(Tensor* t, const void* data, size_t size, size_t offset) {
  LOOM_RETURN_IF_ERROR(check_io("tensor.set", t, size, offset));
  loom_buffer_t* b = t->buffer;
  return registry::buffer_set_tensor(b, t, data, offset, size);
}

Status tensor_get(const Tensor* t, void* data, size_t size, size_t offset) {
  LOOM_RETURN_IF_ERROR(check_io("tensor.get", t, size, offset));
  loom_buffer_t* b = t->buffer;
  return registry::buffer_get_tensor(b, t, data, offset, size);
}

}  // namespace loom
