#include <gtest/gtest.h>
TEST(Placeholder, Registry) {}
