# End-to-end tests of the lockstep program in the emulated GPU build
# (tests/cli/test_emulated.py): two emulated devices against the CPU backend,
# and `lockstep info` saying the devices are emulated. Labelled gpu; they pin
# their own device count.
if(NOT LOCKSTEP_GPU STREQUAL "emulated")
  return()
endif()
foreach(t test_two_emulated_devices_train_as_the_cpu test_two_emulated_devices_train_in_nhwc_as_the_cpu_in_nchw
          test_label_smoothing_trains_on_two_emulated_devices_as_on_the_cpu
          test_bf16_trains_on_an_emulated_gpu_as_on_the_cpu
          test_bf16_on_an_emulated_gpu_keeps_a_given_nchw_and_resumes_in_it
          test_bf16_with_sync_bn_on_emulated_gpus_trains_in_nhwc
          test_info_says_the_devices_are_emulated)
  add_test(NAME emulated_cli.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_emulated.py Emulated.${t})
  set_tests_properties(emulated_cli.${t} PROPERTIES LABELS gpu TIMEOUT 900
    ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_EMU_DEVICES=2;PYTHONDONTWRITEBYTECODE=1")
endforeach()
