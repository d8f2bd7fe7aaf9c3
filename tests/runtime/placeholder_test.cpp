#include <gtest/gtest.h>
TEST(Placeholder, Runtime) {}
