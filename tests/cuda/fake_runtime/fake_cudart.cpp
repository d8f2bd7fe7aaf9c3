// A stand-in for the CUDA runtime (the entries the cuda plugin calls, as
// nvcc's host stubs and plugins/cuda use them), for counting what the plugin
// asks of a GPU without one: the plugin's own objects linked against this
// library instead of cudart_static (tests/CMakeLists.txt: libloom-cuda.so in
// fake_cuda_plugin/), beside tests/cuda/fake_libcuda.c as the driver.
//
// "Device" memory is host memory (calloc), copies and memsets are done,
// kernels are counted and not run, a stream capture records the launches it
// sees and a graph launch counts once. The emulated plugin (tests/cuda/emu)
// runs its kernels on the host through loom::fake_cudart::submit: work on a
// stream runs at once, or, while the stream captures, is recorded (with the
// stream's async copies and memsets) and replayed in order by every launch
// of the instantiated graph. At exit the counts are appended as one
// line "key=value ..." to the file LOOM_FAKE_CUDART_LOG names, and, when
// LOOM_FAKE_CUDART_KERNELS names a file, every kernel launched or captured
// with its count ("count name", names demangled, most launched first): the
// census of a decode step. One device: compute capability 9.0, 132 SMs,
// 80 GiB. Test only.
#include <cuda_runtime_api.h>

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

struct Counts {
  std::atomic<long> launches{0};          // kernels launched eagerly
  std::atomic<long> captured{0};          // kernels recorded into a graph
  std::atomic<long> graph_launches{0};    // cudaGraphLaunch
  std::atomic<long> instantiations{0};    // cudaGraphInstantiate
  std::atomic<long> stream_syncs{0};      // cudaStreamSynchronize
  std::atomic<long> device_syncs{0};      // cudaDeviceSynchronize
  std::atomic<long> event_syncs{0};       // cudaEventSynchronize
  std::atomic<long> allocs{0};            // cudaMalloc / cudaHostAlloc / cudaMallocHost
  std::atomic<long> frees{0};
  std::atomic<long> copies_h2d{0};        // cudaMemcpy[Async] host -> device
  std::atomic<long> copies_d2h{0};        // cudaMemcpy[Async] device -> host
  std::atomic<long> copies_sync{0};       // cudaMemcpy (blocking)
};
Counts g;

std::mutex mu;
std::unordered_set<const void*> capturing;  // streams in capture
std::unordered_map<const void*, std::string> kernel_names;  // host stub -> device function (mangled)
std::map<std::string, long> kernel_counts;                   // under mu

std::string demangled(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  return out;
}

void count_kernel(const void* fn) {
  std::lock_guard<std::mutex> lock(mu);
  const auto it = kernel_names.find(fn);
  ++kernel_counts[it == kernel_names.end() ? std::string("?") : it->second];
}
thread_local dim3 cfg_grid, cfg_block;
thread_local size_t cfg_shared = 0;
thread_local void* cfg_stream = nullptr;

struct Report {
  ~Report() {
    if (const char* kpath = std::getenv("LOOM_FAKE_CUDART_KERNELS"); kpath != nullptr && *kpath != '\0') {
      if (FILE* k = std::fopen(kpath, "w")) {
        std::vector<std::pair<long, std::string>> rows;
        for (const auto& [name, n] : kernel_counts) rows.emplace_back(n, demangled(name));
        std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (const auto& [n, name] : rows) std::fprintf(k, "%ld %s\n", n, name.c_str());
        std::fclose(k);
      }
    }
    const char* path = std::getenv("LOOM_FAKE_CUDART_LOG");
    if (path == nullptr || *path == '\0') return;
    FILE* f = std::fopen(path, "a");
    if (f == nullptr) return;
    std::fprintf(f,
                 "launches=%ld captured=%ld graph_launches=%ld instantiations=%ld stream_syncs=%ld "
                 "device_syncs=%ld event_syncs=%ld allocs=%ld frees=%ld copies_h2d=%ld copies_d2h=%ld "
                 "copies_sync=%ld\n",
                 g.launches.load(), g.captured.load(), g.graph_launches.load(), g.instantiations.load(),
                 g.stream_syncs.load(), g.device_syncs.load(), g.event_syncs.load(), g.allocs.load(),
                 g.frees.load(), g.copies_h2d.load(), g.copies_d2h.load(), g.copies_sync.load());
    std::fclose(f);
  }
};
Report report;

bool in_capture(const void* stream) {
  std::lock_guard<std::mutex> lock(mu);
  return capturing.count(stream) != 0;
}

void* zeroed(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  std::memset(p, 0, bytes == 0 ? 1 : bytes);
  return p;
}

void count_copy(cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice) ++g.copies_h2d;
  if (kind == cudaMemcpyDeviceToHost) ++g.copies_d2h;
}

struct FakeGraph {
  std::vector<std::function<void()>> work;  // the emulated plugin's kernels, copies, memsets
};

std::unordered_map<const void*, FakeGraph> captures;  // under mu: what each capturing stream recorded
thread_local cudaError_t last_error = cudaSuccess;

// Runs work now, or appends it to the stream's capture.
void run_or_record(const void* stream, std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = captures.find(stream);
    if (it != captures.end()) {
      it->second.work.push_back(std::move(work));
      return;
    }
  }
  work();
}

}  // namespace

namespace loom::fake_cudart {
void submit(cudaStream_t stream, std::function<void()> work, bool kernel) {
  if (kernel) {
    if (in_capture(stream)) {
      ++g.captured;
    } else {
      ++g.launches;
    }
  }
  run_or_record(stream, std::move(work));
}
void set_error(cudaError_t e) { last_error = e; }
}  // namespace loom::fake_cudart

extern "C" {

// ---------------------------------------------------------------- nvcc's host stubs
void** __cudaRegisterFatBinary(void* fat_cubin) {
  static void* handle = nullptr;
  (void)fat_cubin;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_fn, char* device_fn, const char*, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  std::lock_guard<std::mutex> lock(mu);
  kernel_names[host_fn] = device_fn != nullptr ? device_fn : "?";
}
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  cfg_grid = grid;
  cfg_block = block;
  cfg_shared = shared;
  cfg_stream = stream;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  *grid = cfg_grid;
  *block = cfg_block;
  *shared = cfg_shared;
  *static_cast<void**>(stream) = cfg_stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fn) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fn));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3, dim3, void**, size_t, cudaStream_t stream) {
  count_kernel(reinterpret_cast<const void*>(kernel));
  if (in_capture(stream)) {
    ++g.captured;
  } else {
    ++g.launches;
  }
  return cudaSuccess;
}

// ---------------------------------------------------------------- errors, devices
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorFake"; }
const char* cudaGetErrorString(cudaError_t) { return "fake CUDA runtime error"; }
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int) {
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "Fake GPU (tests/cuda/fake_runtime/fake_cudart.cpp)");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = size_t{80} << 30;
  prop->pciBusID = 0x42;
  for (int i = 0; i < 16; ++i) prop->uuid.bytes[i] = static_cast<char>(0xF0 + i);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total_b) {
  *total_b = size_t{80} << 30;
  *free_b = size_t{79} << 30;
  return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void*) {
  std::memset(attr, 0, sizeof(*attr));
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  attr->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) {
  *can = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) {
  ++g.device_syncs;
  return cudaSuccess;
}

// ---------------------------------------------------------------- memory
cudaError_t cudaMalloc(void** p, size_t bytes) {
  ++g.allocs;
  if (bytes > (size_t{80} << 30)) return cudaErrorMemoryAllocation;  // more than the fake device has
  *p = zeroed(bytes);
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) { return cudaMalloc(p, bytes); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFree(void* p) {
  if (p != nullptr) ++g.frees;
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  ++g.copies_sync;
  count_copy(kind);
  if (bytes != 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t s) {
  count_copy(kind);
  if (bytes != 0) run_or_record(s, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t bytes) {
  std::memset(p, v, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t s) {
  run_or_record(s, [p, v, bytes] { std::memset(p, v, bytes); });
  return cudaSuccess;
}

// ---------------------------------------------------------------- streams, events
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = reinterpret_cast<cudaStream_t>(zeroed(64));
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::free(s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  ++g.stream_syncs;
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = reinterpret_cast<cudaEvent_t>(zeroed(64));
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::free(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  ++g.event_syncs;
  return cudaSuccess;
}

// ---------------------------------------------------------------- graphs
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
  std::lock_guard<std::mutex> lock(mu);
  capturing.insert(s);
  captures[s] = FakeGraph{};
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  auto* fg = new FakeGraph();
  {
    std::lock_guard<std::mutex> lock(mu);
    capturing.erase(s);
    auto it = captures.find(s);
    if (it != captures.end()) {
      fg->work = std::move(it->second.work);
      captures.erase(it);
    }
  }
  *graph = reinterpret_cast<cudaGraph_t>(fg);
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  ++g.instantiations;
  *exec = reinterpret_cast<cudaGraphExec_t>(new FakeGraph(*reinterpret_cast<FakeGraph*>(graph)));
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<FakeGraph*>(graph);
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<FakeGraph*>(exec);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  ++g.graph_launches;
  for (const auto& work : reinterpret_cast<FakeGraph*>(exec)->work) work();
  return cudaSuccess;
}

}  // extern "C"
