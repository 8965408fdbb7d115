# tests/core/syscalls.c also drives the doorbells of the notify module: only
# where that module is built (make MODULES="ipc" builds core and ipc alone).
bypass_module_enabled(notify bypass_core_test_notify)
if(bypass_core_test_notify)
  target_compile_definitions(test-core-syscalls PRIVATE BYPASS_TEST_NOTIFY=1)
endif()
