# SPDX-License-Identifier: MIT
# Included by the build's CTestTestfile.cmake when ctest reads it (tests/
# CMakeLists.txt names it in TEST_INCLUDE_FILES).  With
# BYPASS_TEST_TIMEOUT_SCALE=N (a positive integer) in ctest's environment,
# every test's TIMEOUT is multiplied by N, as harness.h's test_timeout() is:
# for a machine N times slower than the one the limits were set on, such as
# the emulated VM of tools/check-kernel.sh.  The include comes before the
# tests' own set_tests_properties calls, so the command is wrapped.
if("$ENV{BYPASS_TEST_TIMEOUT_SCALE}" MATCHES "^[1-9][0-9]*$")
  function(set_tests_properties)
    set(code "_set_tests_properties(")
    set(scale_next FALSE)
    math(EXPR last "${ARGC} - 1")
    foreach(i RANGE ${last})
      set(a "${ARGV${i}}")
      if(scale_next)
        math(EXPR a "${a} * $ENV{BYPASS_TEST_TIMEOUT_SCALE}")
        set(scale_next FALSE)
      elseif(a STREQUAL "TIMEOUT")
        set(scale_next TRUE)
      endif()
      string(APPEND code " [==[${a}]==]")
    endforeach()
    cmake_language(EVAL CODE "${code})")
  endfunction()
endif()
