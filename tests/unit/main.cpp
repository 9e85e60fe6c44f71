// doctest's main, in its own translation unit so the test files compile quickly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
