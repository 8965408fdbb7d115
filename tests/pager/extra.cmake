# The pager tests' shared object policy (tests/pager/lib/testpolicy.c),
# loaded by the policy tests from $BYPASS_BUILD/tests/pager/testpolicy.so.
add_library(bypass-testpolicy MODULE ${CMAKE_CURRENT_SOURCE_DIR}/pager/lib/testpolicy.c)
target_include_directories(bypass-testpolicy PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(bypass-testpolicy PROPERTIES PREFIX "" OUTPUT_NAME testpolicy
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/pager)

# tests/pager/heap-pack-unit.c includes preload/pager/pack.c (the heap's
# packer) with its calls out stubbed: the preload's include path, its
# scaffold, and BYPASS_PP_JEMALLOC where the preload has the heap (it skips
# otherwise).
if(TARGET test-pager-heap-pack-unit)
  target_include_directories(test-pager-heap-pack-unit PRIVATE ${PROJECT_SOURCE_DIR}/preload)
  target_link_libraries(test-pager-heap-pack-unit PRIVATE bypass_preload_common)
  if(BYPASS_PP_HEAP_BUILT)
    target_compile_definitions(test-pager-heap-pack-unit PRIVATE BYPASS_PP_JEMALLOC=1)
  endif()
endif()

# tests/pager/lib/threadspy.c: loaded before the pager preload by
# preload-heap-engage, from $BYPASS_BUILD/tests/pager/threadspy.so.
add_library(bypass-threadspy MODULE ${CMAKE_CURRENT_SOURCE_DIR}/pager/lib/threadspy.c)
target_link_libraries(bypass-threadspy PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
set_target_properties(bypass-threadspy PROPERTIES PREFIX "" OUTPUT_NAME threadspy
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/pager)
if(TARGET test-pager-preload-heap-engage)
  add_dependencies(test-pager-preload-heap-engage bypass-threadspy)
endif()
