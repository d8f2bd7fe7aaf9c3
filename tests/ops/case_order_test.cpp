// The conformance cases come in a fixed order: by source file name, then
// source order within a file, whatever order the linker gave their static
// initializers (a unity build reversed it). `loom conformance --no-isolate`
// and its tests rely on it: a case that loses the device's context takes
// the later cases of the run with it.
#include <gtest/gtest.h>

#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

TEST(CaseOrder, BySourceFileThenSourceOrder) {
  const std::vector<CaseInfo>& cases = all_cases();
  ASSERT_GT(cases.size(), 10u);
  EXPECT_EQ(cases.front().suite + "." + cases.front().name, "Abi.Negotiation");
  for (size_t i = 1; i < cases.size(); ++i) {
    EXPECT_LE(cases[i - 1].file, cases[i].file)
        << cases[i - 1].suite << "." << cases[i - 1].name << " before " << cases[i].suite << "."
        << cases[i].name;
  }
  // Within matmul_cases.cpp, its first case in the file comes first.
  for (const CaseInfo& c : cases) {
    if (c.file != "matmul_cases.cpp") continue;
    EXPECT_EQ(c.suite + "." + c.name, "MatMulTest.FloatTypesOddSizes");
    break;
  }
}

}  // namespace
}  // namespace loom::conformance
