# The pager preload's heap (preload/pager/heap.c) is jemalloc over pager
# regions: Debian's libjemalloc-dev (tools/deps.sh installs it).  Without it
# (not installed, or -DBYPASS_JEMALLOC=OFF: CI builds that way once, on a
# machine that has it) the preload still builds and pages large allocations
# only; BYPASS_PAGER_HEAP then has no effect, and `bypass doctor` says why
# (pager.heap: BYPASS_PP_HEAP_WHY, passed to the command in cli/).
option(BYPASS_JEMALLOC "the pager preload's heap (jemalloc over pager regions)" ON)
set(BYPASS_PP_HEAP_BUILT 0)
if(NOT BYPASS_JEMALLOC)
  set(BYPASS_PP_HEAP_WHY "built with -DBYPASS_JEMALLOC=OFF")
else()
  pkg_check_modules(JEMALLOC IMPORTED_TARGET jemalloc)
  if(JEMALLOC_FOUND)
    set(BYPASS_PP_HEAP_BUILT 1)
    set(BYPASS_PP_HEAP_WHY "jemalloc ${JEMALLOC_VERSION} over pager regions")
  else()
    set(BYPASS_PP_HEAP_WHY "jemalloc (libjemalloc-dev) not found at build time")
  endif()
endif()
if(BYPASS_PP_HEAP_BUILT)
  target_link_libraries(bypass-pager PRIVATE PkgConfig::JEMALLOC)
  target_compile_definitions(bypass-pager PRIVATE BYPASS_PP_JEMALLOC=1)
else()
  message(WARNING "the pager preload pages large allocations only "
                  "(BYPASS_PAGER_HEAP has no effect): ${BYPASS_PP_HEAP_WHY}")
endif()
