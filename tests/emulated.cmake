# End-to-end tests of the lockstep program in the emulated GPU build
# (tests/cli/test_emulated.py): two emulated devices against the CPU backend,
# and `lockstep info` saying the devices are emulated. Labelled gpu; they pin
# their own device count.
if(NOT LOCKSTEP_GPU STREQUAL "emulated")
  return()
endif()
# Every `def test_*(self):` of the script is a test of its own.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_emulated.py)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_emulated.py _emulated_defs REGEX "^    def test_[A-Za-z0-9_]+\\(self\\):")
set(_emulated_tests "")
foreach(_def IN LISTS _emulated_defs)
  string(REGEX REPLACE "^    def (test_[A-Za-z0-9_]+)\\(self\\):.*" "\\1" _name "${_def}")
  list(APPEND _emulated_tests ${_name})
endforeach()
foreach(t IN LISTS _emulated_tests)
  add_test(NAME emulated_cli.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_emulated.py Emulated.${t})
  set_tests_properties(emulated_cli.${t} PROPERTIES LABELS gpu TIMEOUT 900
    ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_EMU_DEVICES=2;PYTHONDONTWRITEBYTECODE=1")
endforeach()

# scripts/gpu-quick-sanitize (the sanitizer step of `scripts/gpu-check
# quick`) on the emulated build's test binary, a stand-in playing
# compute-sanitizer (tests/build/test_gpu_quick_sanitize.py).
foreach(t test_each_spec_alternative_selects_a_test test_a_sanitizer_that_runs_the_tests_reports_each_tool_clean
          test_a_sanitizer_that_runs_nothing_is_no_clean_run test_findings_fail_with_the_tools_summary
          test_no_sanitizer_is_reported_not_found_for_each_tool test_no_time_left_is_reported_not_run)
  add_test(NAME gpu_check.QuickSanitize.${t} COMMAND /usr/bin/python3
           ${CMAKE_CURRENT_SOURCE_DIR}/build/test_gpu_quick_sanitize.py QuickSanitize.${t})
  set_tests_properties(gpu_check.QuickSanitize.${t} PROPERTIES LABELS gpu TIMEOUT 900
    ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR};LOCKSTEP_GPU_TESTS=$<TARGET_FILE:lockstep_gpu_tests>;PYTHONDONTWRITEBYTECODE=1")
endforeach()

# scripts/gpu-quick-loader (the loader step of `scripts/gpu-check quick`):
# JPEGs, their cache, an epoch of each on 1 and 2 emulated devices
# (tests/build/test_gpu_quick_loader.py).
foreach(t test_one_emulated_device_reports_both_epochs test_two_emulated_devices_report_both_epochs
          test_a_failed_run_is_reported_not_passed test_no_time_left_is_reported_not_run)
  add_test(NAME gpu_check.QuickLoader.${t} COMMAND /usr/bin/python3
           ${CMAKE_CURRENT_SOURCE_DIR}/build/test_gpu_quick_loader.py QuickLoader.${t})
  set_tests_properties(gpu_check.QuickLoader.${t} PROPERTIES LABELS gpu TIMEOUT 900
    ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR};LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;PYTHONDONTWRITEBYTECODE=1")
endforeach()

# scripts/gpu-quick-finetune (the fine-tuning step of `scripts/gpu-check
# quick`): tv-resnet18 frozen, then scaled, on 1 emulated device
# (tests/build/test_gpu_quick_finetune.py; torch makes the state dict).
foreach(t test_frozen_then_scaled_on_one_emulated_device test_no_time_left_is_reported_not_run)
  add_test(NAME gpu_check.QuickFinetune.${t} COMMAND /usr/bin/python3
           ${CMAKE_CURRENT_SOURCE_DIR}/build/test_gpu_quick_finetune.py QuickFinetune.${t})
  set_tests_properties(gpu_check.QuickFinetune.${t} PROPERTIES LABELS gpu TIMEOUT 900
    ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR};LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;PYTHONDONTWRITEBYTECODE=1")
endforeach()
