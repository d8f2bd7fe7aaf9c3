// Every fake plugin ends in the expected record; the good ones still work.
#include <gtest/gtest.h>

#include <utility>

#include "loom/runtime/ops.hpp"
#include "registry_test_util.hpp"

namespace loom::test {
namespace {

using registry::Fate;
using registry::Registry;
using registry::Stage;

class FakePlugins : public ::testing::Test {
 protected:
  void SetUp() override { reg_ = Registry::load(only({fake_dir()})); }
  void TearDown() override {
    if (reg_) {
      EXPECT_TRUE(reg_->shutdown().ok());
    }
  }
  const registry::Candidate& get(const std::string& plugin, const std::string& variant = "") {
    const auto* c = find_candidate(*reg_, plugin, variant);
    if (!c) {
      ADD_FAILURE() << "no record for " << plugin << "\n" << describe(*reg_);
      static registry::Candidate none;
      return none;
    }
    return *c;
  }
  // The ABI 1.1 fake (minor1) and one of this header's minor (allops),
  // for host rule 15; nullptr (after a failure naming the records) when
  // either is missing.
  std::pair<registry::Device*, registry::Device*> older_and_current() {
    registry::Device* v11 = reg_->device("minor1");
    registry::Device* now = reg_->device("allops0");
    v11 = v11 ? v11 : reg_->device("minor10");
    if (v11 == nullptr || now == nullptr) {
      ADD_FAILURE() << "no minor1 or allops0 device\n" << describe(*reg_);
      return {nullptr, nullptr};
    }
    return {v11, now};
  }
  std::unique_ptr<Registry> reg_;
  CleanLoomEnv env_;
};

TEST_F(FakePlugins, EveryFileIsRecordedAsApplicationOrigin) {
  ASSERT_GE(reg_->candidates().size(), 17u) << describe(*reg_);
  for (const auto& c : reg_->candidates()) {
    EXPECT_EQ(c.origin, "application") << c.path;
    EXPECT_EQ(c.path.rfind(fake_dir(), 0), 0u) << c.path;
    if (c.fate != Fate::kReady) {
      EXPECT_FALSE(c.reason.empty()) << c.path;
    }
  }
}

TEST_F(FakePlugins, WrongMajorIsRefusedWithBothVersions) {
  const auto& c = get("wrongmajor");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kOpened);
  EXPECT_TRUE(contains(c.reason, "[registry.load] libloom-wrongmajor.so: needs ABI 2.x, host has " +
                                   std::to_string(LOOM_ABI_VERSION_MAJOR) + "." +
                                   std::to_string(LOOM_ABI_VERSION_MINOR))) << c.reason;
  EXPECT_EQ(LOOM_ABI_MAJOR(c.abi_version), 2u);
}

TEST_F(FakePlugins, NewerMinorLoadsAndWorks) {
  const auto& c = get("newerminor");
  EXPECT_EQ(c.fate, Fate::kReady) << c.reason;
  EXPECT_EQ(c.stage, Stage::kReady);
  EXPECT_EQ(LOOM_ABI_MAJOR(c.abi_version), LOOM_ABI_VERSION_MAJOR);
  EXPECT_EQ(LOOM_ABI_MINOR(c.abi_version), LOOM_ABI_VERSION_MINOR + 1);
  EXPECT_EQ(c.plugin_version, "0.0.1-fake");
  EXPECT_EQ(c.device_count, 1u);
  registry::Device* d = reg_->device("newerminor0");
  ASSERT_NE(d, nullptr) << describe(*reg_);
  auto buf = d->alloc_buffer(256);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  EXPECT_TRUE(buf->is_host());
  EXPECT_TRUE(buf->clear(7).ok());
}

// Host rule 15: an op id added after the plugin's ABI minor is never offered
// to it, even when its supports_op would say yes to anything.
TEST_F(FakePlugins, OpsNewerThanThePluginsMinorAreNotOffered) {
  const auto& c = get("oldminor");
  ASSERT_EQ(c.fate, Fate::kReady) << c.reason;
  EXPECT_EQ(LOOM_ABI_MINOR(c.abi_version), 0u);
  registry::Device* old_dev = reg_->device("oldminor0");
  registry::Device* new_dev = reg_->device("allops0");
  ASSERT_NE(old_dev, nullptr) << describe(*reg_);
  ASSERT_NE(new_dev, nullptr) << describe(*reg_);
  Context ctx;
  Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {8, 2, 1}, "q").value();
  Tensor* k = ctx.new_tensor(LOOM_TYPE_F32, {8, 4, 2}, "k").value();
  Tensor* v = ctx.new_tensor(LOOM_TYPE_F32, {8, 4, 2}, "v").value();
  Tensor* vis = ctx.new_tensor(LOOM_TYPE_I32, {1}, "vis").value();
  Tensor* attn = op::attention(ctx, q, k, v, vis, 1.0f).value();
  Tensor* add = op::add(ctx, q, q).value();
  EXPECT_TRUE(old_dev->supports_op(add));    // a 1.0 op: the plugin is asked
  EXPECT_FALSE(old_dev->supports_op(attn));  // op 25 is 1.1: the host answers
  EXPECT_TRUE(new_dev->supports_op(attn));   // a 1.1 plugin is asked
}

// Host rule 15 for the ABI 1.3 ops: the sparse products are never offered
// to a plugin built for 1.1 (or 1.2), whatever its supports_op says.
TEST_F(FakePlugins, SparseProductsAreNotOfferedToOlderMinors) {
  const auto [v11, now] = older_and_current();
  if (v11 == nullptr) return;
  ASSERT_EQ(LOOM_ABI_MINOR(get("allops").abi_version), LOOM_ABI_VERSION_MINOR);
  Context ctx;
  Tensor* a = ctx.new_tensor(LOOM_TYPE_F32, {32, 8}, "a").value();
  Tensor* x = ctx.new_tensor(LOOM_TYPE_F32, {32, 1}, "x").value();
  Tensor* s = ctx.new_tensor(LOOM_TYPE_F32, {8, 1}, "s").value();
  Tensor* h = ctx.new_tensor(LOOM_TYPE_F32, {8, 1}, "h").value();
  Tensor* rows = op::mul_mat_sparse_rows(ctx, a, x, s, 0.0f).value();
  Tensor* cols = op::mul_mat_sparse_cols(ctx, a, h, s, 0.0f).value();
  Tensor* mm = op::mul_mat(ctx, a, x).value();
  EXPECT_TRUE(v11->supports_op(mm));     // a 1.0 op: the plugin is asked
  EXPECT_FALSE(v11->supports_op(rows));  // op 26 is 1.3: the host answers
  EXPECT_FALSE(v11->supports_op(cols));  // op 27 too
  EXPECT_TRUE(now->supports_op(rows));   // a 1.3 plugin is asked
  EXPECT_TRUE(now->supports_op(cols));
}

// Host rule 15 for forms: ATTENTION's ranges form (ABI 1.4) is never
// offered to a plugin built for 1.1, which knows the op but would read the
// [2, T] ranges as [T] lengths.
TEST_F(FakePlugins, AttentionRangesAreNotOfferedToOlderMinors) {
  const auto [v11, now] = older_and_current();
  if (v11 == nullptr) return;
  Context ctx;
  Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {8, 2, 3}, "q").value();
  Tensor* k = ctx.new_tensor(LOOM_TYPE_F32, {8, 40, 2}, "k").value();
  Tensor* lens = ctx.new_tensor(LOOM_TYPE_I32, {3}, "lens").value();
  Tensor* ranges = ctx.new_tensor(LOOM_TYPE_I32, {2, 3}, "ranges").value();
  Tensor* prefix = op::attention(ctx, q, k, k, lens, 1.0f).value();
  Tensor* ranged = op::attention(ctx, q, k, k, ranges, 1.0f).value();
  EXPECT_EQ(prefix->op_params[1], 0);
  EXPECT_EQ(ranged->op_params[1], LOOM_ATTENTION_RANGES);
  EXPECT_TRUE(v11->supports_op(prefix));   // the 1.1 form: the plugin is asked
  EXPECT_FALSE(v11->supports_op(ranged));  // the 1.4 form: the host answers
  EXPECT_TRUE(now->supports_op(ranged));
}

// Host rule 15 for forms: ATTENTION over a Q8_0 cache (ABI 1.6) is never
// offered to a plugin built for an older minor, which knows the op and the
// type but would read the blocks as float rows.
TEST_F(FakePlugins, AttentionOverAQ8CacheIsNotOfferedToOlderMinors) {
  const auto [v11, now] = older_and_current();
  if (v11 == nullptr) return;
  Context ctx;
  Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {32, 2, 3}, "q").value();
  Tensor* k8 = ctx.new_tensor(LOOM_TYPE_Q8_0, {32, 40, 2}, "k8").value();
  Tensor* k16 = ctx.new_tensor(LOOM_TYPE_F16, {32, 40, 2}, "k16").value();
  Tensor* lens = ctx.new_tensor(LOOM_TYPE_I32, {3}, "lens").value();
  Tensor* half = op::attention(ctx, q, k16, k16, lens, 1.0f).value();
  EXPECT_TRUE(v11->supports_op(half));  // the 1.1 form over F16: the plugin is asked
  for (Tensor* n : {op::attention(ctx, q, k8, k8, lens, 1.0f).value(), op::attention(ctx, q, k16, k8, lens, 1.0f).value(),
                    op::attention(ctx, q, k8, k16, lens, 1.0f).value()}) {
    EXPECT_FALSE(v11->supports_op(n)) << n->describe();  // the host answers for the 1.1 plugin
    EXPECT_TRUE(now->supports_op(n)) << n->describe();
  }
}

// Host rule 15 for the ABI 1.5 ops: MUL_MAT_ID, TOP_K and TANH are never
// offered to a plugin built for an older minor.
TEST_F(FakePlugins, ExpertOpsAreNotOfferedToOlderMinors) {
  const auto [v11, now] = older_and_current();
  if (v11 == nullptr) return;
  Context ctx;
  Tensor* a = ctx.new_tensor(LOOM_TYPE_F32, {32, 8, 4}, "experts").value();
  Tensor* x = ctx.new_tensor(LOOM_TYPE_F32, {32, 1, 3}, "x").value();
  Tensor* ids = ctx.new_tensor(LOOM_TYPE_I32, {2, 3}, "ids").value();
  Tensor* p = ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "p").value();
  for (Tensor* n : {op::mul_mat_id(ctx, a, x, ids).value(), op::top_k(ctx, p, 2).value(), op::tanh(ctx, p).value()}) {
    EXPECT_FALSE(v11->supports_op(n)) << n->describe();  // the host answers for the 1.1 plugin
    EXPECT_TRUE(now->supports_op(n)) << n->describe();
  }
}

// Host rule 15 for types: a tensor of a type added after the plugin's minor
// (ABI 1.2: Q4_K and the other K-quants) is never offered to it.
TEST_F(FakePlugins, TypesNewerThanThePluginsMinorAreNotOffered) {
  const auto [v11, v12] = older_and_current();
  if (v11 == nullptr) return;
  EXPECT_EQ(LOOM_ABI_MINOR(get("minor1").abi_version), 1u);
  Context ctx;
  Tensor* w = ctx.new_tensor(LOOM_TYPE_Q4_K, {256, 4}, "w").value();
  Tensor* w0 = ctx.new_tensor(LOOM_TYPE_Q4_0, {256, 4}, "w0").value();
  Tensor* x = ctx.new_tensor(LOOM_TYPE_F32, {256, 2}, "x").value();
  Tensor* mm = op::mul_mat(ctx, w, x).value();
  Tensor* mm0 = op::mul_mat(ctx, w0, x).value();
  EXPECT_FALSE(v11->supports_op(mm));  // Q4_K is 1.2: the host answers
  EXPECT_TRUE(v11->supports_op(mm0));  // Q4_0 is 1.0: the plugin is asked
  EXPECT_TRUE(v12->supports_op(mm));
}

// Host rule 15 for an op's later form: ROPE with frequency factors (src2,
// ABI 1.2) is never offered to a 1.1 plugin, whose kernels would ignore the
// factors; the same ROPE without them still is.
TEST_F(FakePlugins, OpFormsNewerThanThePluginsMinorAreNotOffered) {
  const auto [v11, v12] = older_and_current();
  if (v11 == nullptr) return;
  ASSERT_EQ(LOOM_ABI_MINOR(get("minor1").abi_version), 1u);
  ASSERT_GE(LOOM_ABI_MINOR(get("allops").abi_version), 2u);
  Context ctx;
  Tensor* q = ctx.new_tensor(LOOM_TYPE_F32, {8, 2, 3}, "q").value();
  Tensor* pos = ctx.new_tensor(LOOM_TYPE_I32, {3}, "pos").value();
  Tensor* ff = ctx.new_tensor(LOOM_TYPE_F32, {4}, "ff").value();
  Tensor* plain = op::rope(ctx, q, pos, 8, LOOM_ROPE_MODE_NORMAL, 1e4f, 1.0f).value();
  Tensor* factors = op::rope(ctx, q, pos, 8, LOOM_ROPE_MODE_NORMAL, 1e4f, 1.0f, ff).value();
  EXPECT_TRUE(v11->supports_op(plain));     // ROPE is 1.0: the plugin is asked
  EXPECT_FALSE(v11->supports_op(factors));  // its src2 is 1.2: the host answers
  EXPECT_TRUE(v12->supports_op(factors));   // a 1.2 plugin is asked
}

TEST_F(FakePlugins, MissingEntrySymbol) {
  const auto& c = get("nosymbol");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kOpened);
  EXPECT_TRUE(contains(c.reason, "no loom_plugin_query symbol")) << c.reason;
}

TEST_F(FakePlugins, ProbeUnavailableIsNormal) {
  const auto& c = get("unavailable");
  EXPECT_EQ(c.fate, Fate::kUnavailable);
  EXPECT_EQ(c.stage, Stage::kProbed);
  EXPECT_TRUE(contains(c.reason, "UNAVAILABLE by design")) << c.reason;
}

TEST_F(FakePlugins, InitErrorKeepsTheStatusText) {
  const auto& c = get("initerror");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kNegotiated);
  EXPECT_TRUE(contains(c.reason, "INTERNAL")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "driver table corrupt: expected 7, got 3")) << c.reason;
}

TEST_F(FakePlugins, ExceptionFromInitIsCaught) {
  const auto& c = get("throwinit");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kNegotiated);
  EXPECT_TRUE(contains(c.reason, "threw an exception: fake init exploded")) << c.reason;
}

TEST_F(FakePlugins, ExceptionFromGetPropsIsCaught) {
  const auto& c = get("throwprops");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kProbed);
  EXPECT_TRUE(contains(c.reason, "threw an exception: fake get_props exploded")) << c.reason;
  EXPECT_EQ(reg_->device("throwprops0"), nullptr);
}

TEST_F(FakePlugins, BadStructSizeNamesBothSizes) {
  const auto& c = get("badsize");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kOpened);
  std::string got = std::to_string(LOOM_STRUCT_END(loom_plugin_t, name));
  std::string need = std::to_string(sizeof(loom_plugin_t));
  EXPECT_TRUE(contains(c.reason, "struct_size " + got)) << c.reason;
  EXPECT_TRUE(contains(c.reason, "ABI 1.0 size " + need)) << c.reason;
}

TEST_F(FakePlugins, QueryReturningNull) {
  const auto& c = get("nullquery");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kOpened);
  EXPECT_TRUE(contains(c.reason, "returned NULL")) << c.reason;
}

TEST_F(FakePlugins, MissingDependencyIsNamed) {
  const auto& c = get("missingdep");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kFound);
  EXPECT_TRUE(contains(c.reason, "libloomfake-dep.so: cannot open shared object file")) << c.reason;
}

TEST_F(FakePlugins, TextFileIsNotAPlugin) {
  const auto& c = get("notelf");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kFound);
  EXPECT_TRUE(contains(c.reason, "dlopen failed")) << c.reason;
}

TEST_F(FakePlugins, NullRequiredDeviceEntryFailsCleanly) {
  const auto& c = get("badiface");
  EXPECT_EQ(c.fate, Fate::kFailed);
  EXPECT_EQ(c.stage, Stage::kProbed);
  EXPECT_TRUE(contains(c.reason, "loom_device_iface_t.get_props is NULL")) << c.reason;
}

TEST_F(FakePlugins, BestVariantWins) {
  const auto& high = get("fakevar", "high");
  const auto& low = get("fakevar", "low");
  const auto& never = get("fakevar", "never");
  EXPECT_EQ(high.fate, Fate::kReady) << high.reason;
  EXPECT_EQ(high.score, 5);
  EXPECT_EQ(low.fate, Fate::kSkipped);
  EXPECT_EQ(low.score, 1);
  EXPECT_TRUE(contains(low.reason, "lost to variant fakevar-high (score 5 > 1)")) << low.reason;
  EXPECT_EQ(never.fate, Fate::kSkipped);
  EXPECT_EQ(never.score, 0);
  EXPECT_TRUE(contains(never.reason, "cannot run here")) << never.reason;
  ASSERT_NE(reg_->device("fakevar0"), nullptr);
  EXPECT_EQ(reg_->device("fakevar0")->info().plugin, "fakevar");
}

TEST_F(FakePlugins, SameDeviceFromTwoPluginsIsListedOnce) {
  EXPECT_EQ(get("dupa").fate, Fate::kReady);
  EXPECT_EQ(get("dupb").fate, Fate::kReady);
  ASSERT_NE(reg_->device("dupa0"), nullptr) << describe(*reg_);
  // Listed once; the second view stays reachable by its name only.
  for (const registry::Device* d : reg_->devices()) EXPECT_NE(d->name(), "dupb0") << describe(*reg_);
  ASSERT_NE(reg_->device("dupb0"), nullptr) << describe(*reg_);
  EXPECT_EQ(reg_->device("dupb0")->info().plugin, "dupb");
  EXPECT_EQ(reg_->device("dupa0")->info().type, LOOM_DEVICE_TYPE_GPU);
  EXPECT_FALSE(reg_->device("dupa0")->info().uuid.empty());
  ASSERT_EQ(reg_->duplicates().size(), 1u) << describe(*reg_);
  EXPECT_EQ(reg_->duplicates()[0], "dupb0 (same device as dupa0)");
}

TEST_F(FakePlugins, GoodPluginsKeepWorkingNextToBrokenOnes) {
  ScopedEnv n("LOOM_NULL_DEVICES", "1");
  auto reg = Registry::load(only({fake_dir(), null_plugin_path()}));
  const auto* null_rec = find_candidate(*reg, "null");
  ASSERT_NE(null_rec, nullptr);
  EXPECT_EQ(null_rec->fate, Fate::kReady) << null_rec->reason;
  EXPECT_NE(reg->device("null0"), nullptr);
  EXPECT_NE(reg->device("newerminor0"), nullptr);
  EXPECT_TRUE(reg->shutdown().ok());
}

TEST(FakePluginsCpu, CpuWorksAlongsideTheFakes) {
  CleanLoomEnv env;
  if (!cpu_plugin_ready()) GTEST_SKIP() << "the cpu plugin in " << plugin_dir() << " does not load yet";
  auto reg = Registry::load(only({fake_dir(), plugin_dir()}));
  registry::Device* cpu = reg->device("cpu");
  ASSERT_NE(cpu, nullptr) << describe(*reg);
  EXPECT_EQ(cpu->info().type, LOOM_DEVICE_TYPE_CPU);
  auto buf = cpu->alloc_buffer(1024);
  ASSERT_TRUE(buf.ok()) << buf.status().to_string();
  EXPECT_TRUE(buf->is_host());
  buf->reset();
  EXPECT_TRUE(cpu->set_threads(2).ok());
  EXPECT_TRUE(reg->shutdown().ok());
}

}  // namespace
}  // namespace loom::test
