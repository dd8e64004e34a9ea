// The main of every GoogleTest binary over descent (tests/CMakeLists.txt):
// gtest_main's, with the floors registered first, as every program that
// runs ops does (Note [Registering the floors], floors/registration.cpp).
#include <gtest/gtest.h>

#include "floors/registration.h"

int main(int argc, char** argv) {
  descent::register_floors();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
