#include <gtest/gtest.h>
TEST(Placeholder, Ops) {}
