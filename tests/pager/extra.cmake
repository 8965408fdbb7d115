# The pager tests' shared object policy (tests/pager/lib/testpolicy.c),
# loaded by the policy tests from $BYPASS_BUILD/tests/pager/testpolicy.so.
add_library(bypass-testpolicy MODULE ${CMAKE_CURRENT_SOURCE_DIR}/pager/lib/testpolicy.c)
target_include_directories(bypass-testpolicy PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(bypass-testpolicy PROPERTIES PREFIX "" OUTPUT_NAME testpolicy
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/pager)
