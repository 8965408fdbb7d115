# The batch tests may drive the preload's decision layer in-process
# (preload/batch/defer.h, included as "batch/defer.h"): a static library,
# so a test that does not call it links none of it.
if(TARGET bypass_batch_layer)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    target_link_libraries(test-batch-${name} PRIVATE bypass_batch_layer)
  endforeach()
endif()
