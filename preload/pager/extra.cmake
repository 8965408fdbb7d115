# The pager preload's heap (preload/pager/heap.c) is jemalloc over pager
# regions: Debian's libjemalloc-dev (tools/deps.sh installs it).  Without it
# the preload still builds and pages large allocations only.
pkg_check_modules(JEMALLOC IMPORTED_TARGET jemalloc)
if(JEMALLOC_FOUND)
  target_link_libraries(bypass-pager PRIVATE PkgConfig::JEMALLOC)
  target_compile_definitions(bypass-pager PRIVATE BYPASS_PP_JEMALLOC=1)
else()
  message(WARNING "jemalloc not found (libjemalloc-dev): the pager preload pages "
                  "large allocations only (BYPASS_PAGER_HEAP has no effect)")
endif()
