# Library mode's service objects: the example key-value service
# (examples/ipc-kv/kv-service.c -> build/examples/ipc-kv.so, used by the
# examples, the tests and the benchmark) and the tests' own service
# (tests/ipc/lib/testsvc.c -> build/tests/ipc/testsvc.so), also built with a
# WRPKRU or an XRSTOR sequence in its code, with another ABI, and with a
# TS_ECHO of its own (a rewrite of the object that clients must not run).
add_library(bypass-ipc-kv MODULE ${PROJECT_SOURCE_DIR}/examples/ipc-kv/kv-service.c)
target_include_directories(bypass-ipc-kv PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(bypass-ipc-kv PROPERTIES PREFIX "" OUTPUT_NAME ipc-kv
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples)
foreach(variant testsvc testsvc-wrpkru testsvc-xrstor testsvc-badabi testsvc-alt)
  add_library(bypass-ipc-${variant} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/ipc/lib/testsvc.c)
  target_include_directories(bypass-ipc-${variant} PRIVATE ${PROJECT_SOURCE_DIR}/include
    ${CMAKE_CURRENT_SOURCE_DIR}/ipc)
  set_target_properties(bypass-ipc-${variant} PROPERTIES PREFIX "" OUTPUT_NAME ${variant}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/ipc)
endforeach()
target_compile_definitions(bypass-ipc-testsvc-wrpkru PRIVATE TESTSVC_WRPKRU)
target_compile_definitions(bypass-ipc-testsvc-xrstor PRIVATE TESTSVC_XRSTOR)
target_compile_definitions(bypass-ipc-testsvc-badabi PRIVATE TESTSVC_BADABI)
target_compile_definitions(bypass-ipc-testsvc-alt PRIVATE TESTSVC_ALT)
# The ipc tests include the key-value protocol header by a path CMake
# gives them (it lives beside the example service, not in tests/).
get_property(bypass_ipc_tgts DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY BUILDSYSTEM_TARGETS)
foreach(t ${bypass_ipc_tgts})
  if(t MATCHES "^test-ipc-")
    target_compile_definitions(${t} PRIVATE
      BYPASS_IPC_KV_H="${PROJECT_SOURCE_DIR}/examples/ipc-kv/kv.h")
    add_dependencies(${t} bypass-ipc-kv bypass-ipc-testsvc bypass-ipc-testsvc-wrpkru
      bypass-ipc-testsvc-xrstor bypass-ipc-testsvc-badabi bypass-ipc-testsvc-alt)
  endif()
endforeach()
