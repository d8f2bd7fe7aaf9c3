// Every plugin's entry comes from LOOM_PLUGIN_DEFINE (plugins/common/plugin_entry.h):
// each built plugin refuses a host of another ABI major and a services table
// smaller than ABI 1.0's, and serves a proper host. Called through dlopen as
// the loader does, so a plugin that wrote its own entry and skipped a check
// fails here.
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/plugin.h"

namespace {

namespace fs = std::filesystem;

void* test_alloc(size_t size, size_t alignment) {
  return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
void test_free(void* p) { std::free(p); }
void test_log(loom_log_level_t, const char*, const char*) {}
bool test_log_enabled(loom_log_level_t, const char*) { return false; }

loom_host_services_t full_services() {
  loom_host_services_t s{};
  s.struct_size = sizeof(loom_host_services_t);
  s.host_abi_version = LOOM_ABI_VERSION;
  s.log = test_log;
  s.log_enabled = test_log_enabled;
  s.aligned_alloc = test_alloc;
  s.aligned_free = test_free;
  return s;
}

// The plugins this build made, by path: the shipped ones and the test ones.
std::vector<std::string> built_plugins() {
  std::vector<std::string> out;
  for (const char* name : {"cpu", "blas", "vulkan", "cuda", "null"}) {
    fs::path p = fs::path(LOOM_TEST_PLUGIN_DIR) / ("libloom-" + std::string(name) + ".so");
    if (fs::exists(p)) out.push_back(p.string());
  }
  return out;
}

// A private copy of the plugin file, so this test's services never replace
// those of an instance another test in this process loaded.
struct Lib {
  void* handle = nullptr;
  loom_plugin_query_fn query = nullptr;
  fs::path copy;
  explicit Lib(const std::string& path) {
    copy = fs::temp_directory_path() /
           ("loom-entry-" + std::to_string(::getpid()) + "-" + fs::path(path).filename().string());
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      query = reinterpret_cast<loom_plugin_query_fn>(dlsym(handle, LOOM_PLUGIN_QUERY_SYMBOL));
    }
  }
  ~Lib() {
    if (handle != nullptr) dlclose(handle);
    std::error_code ec;
    fs::remove(copy, ec);
  }
};

TEST(PluginEntry, EveryPluginChecksTheHostBeforeServingIt) {
  std::vector<std::string> plugins = built_plugins();
  ASSERT_FALSE(plugins.empty()) << "no plugin built in " << LOOM_TEST_PLUGIN_DIR;
  for (const std::string& path : plugins) {
    SCOPED_TRACE(path);
    Lib lib(path);
    if (lib.handle == nullptr) {
      // A plugin whose driver library is absent here (cuda without libcuda)
      // may fail to load; the loader reports that elsewhere.
      std::string why = dlerror();
      GTEST_LOG_(INFO) << "skipped " << path << ": " << why;
      continue;
    }
    ASSERT_NE(lib.query, nullptr);

    static loom_host_services_t good = full_services();  // kept by the plugin
    // Another major: refused whatever the services.
    EXPECT_EQ(lib.query(LOOM_ABI_MAKE_VERSION(LOOM_ABI_VERSION_MAJOR + 1u, 0u), &good), nullptr);
    // No services, and services smaller than 1.0's: refused.
    EXPECT_EQ(lib.query(LOOM_ABI_VERSION, nullptr), nullptr);
    loom_host_services_t small = full_services();
    small.struct_size = LOOM_HOST_SERVICES_SIZE_1_0 - 1;
    EXPECT_EQ(lib.query(LOOM_ABI_VERSION, &small), nullptr);
    // A proper host is served, with a table of at least 1.0's size.
    const loom_plugin_t* table = lib.query(LOOM_ABI_VERSION, &good);
    ASSERT_NE(table, nullptr);
    EXPECT_GE(table->struct_size, LOOM_PLUGIN_SIZE_1_0);
  }
}

TEST(PluginEntry, PublishedSizesCoverEveryOneZeroField) {
  // The 1.0 sizes end at the last 1.0 field of each table.
  EXPECT_EQ(LOOM_HOST_SERVICES_SIZE_1_0, LOOM_STRUCT_END(loom_host_services_t, aligned_free));
  EXPECT_LE(LOOM_PLUGIN_SIZE_1_0, sizeof(loom_plugin_t));
  EXPECT_LE(LOOM_DEVICE_IFACE_SIZE_1_0, sizeof(loom_device_iface_t));
  EXPECT_LE(LOOM_STREAM_IFACE_SIZE_1_0, sizeof(loom_stream_iface_t));
}

}  // namespace
