# The batch tests may drive the preload's decision layer in-process
# (preload/batch/defer.h, included as "batch/defer.h"): a static library,
# so a test that does not call it links none of it.
if(TARGET bypass_batch_layer)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    target_link_libraries(test-batch-${name} PRIVATE bypass_batch_layer)
  endforeach()
endif()

# The long real use (tools/realworld/long.sh), in make soak: Debian's nginx,
# lighttpd and redis-server under `bypass run --batch` (under LD_PRELOAD in
# a sanitizer build), loaded by wrk and redis-benchmark for rounds of a few
# seconds; every body checked, descriptors and memory sampled after each
# round, the stats lines checked at exit.  A few minutes each; each skips
# (77) where its server or load tool is not installed.
# Redis's rounds are counted in commands (-n = 12,000 x seconds per kind),
# not seconds: 4 s keeps its run as long as the others' on a loaded machine.
foreach(run "nginx;--server;nginx;--seconds;8"
            "nginx-splice;--server;nginx;--seconds;8;BYPASS_BATCH_SPLICE=1"
            "lighttpd;--server;lighttpd;--seconds;8;--workers;2"
            "redis;--server;redis;--seconds;4")
  list(GET run 0 name)
  list(SUBLIST run 1 -1 args)
  add_test(NAME batch/soak-${name}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tools/realworld/long.sh
            --build ${CMAKE_BINARY_DIR} --rounds 4 ${args})
  set_tests_properties(batch/soak-${name} PROPERTIES LABELS "batch;soak"
    SKIP_RETURN_CODE 77 TIMEOUT 900)
endforeach()
