# The suite's longest tests start first. `ctest -j` runs tests in descending
# COST, and a test without one (a fresh clone has no timings of earlier runs,
# as on CI) in the order it was declared, which left minutes-long tests to
# start near the end of CI's stages while the other core sat idle. Seconds
# from a CI run on two cores; only their order matters. A name missing from a
# build (a flavour without those tests, or one renamed) is passed over; keep
# the list to the longest few of each stage.
set(lockstep_long_tests
  "tf32 and bf16 train simple-cnn on a gpu to within a point of fp32" 358
  # The pretrained-weights chain: each starts when the one before ends.
  torch_pretrained_write 430
  torch_pretrained 415
  torch_pretrained_export 263
  "a tv model's export loads back into another of the same architecture, every tensor equal" 60
  "resnet50 vgg16 vgg16-bn vgg-f and deep-cnn train_step on the gpu equals the cpu" 167
  cli.test_fine_tuning_an_export_beats_as_many_steps_from_scratch_or_from_an_untrained_export 160
  "tf32 and bf16 train simple-cnn and resnet20 to fp32's accuracy on the cpu over three seeds" 135
  emulated_cli.test_bf16_with_sync_bn_on_emulated_gpus_trains_in_nhwc 96
  "resnet18 replicas replaying a step from a CUDA graph" 92
  cli.test_resnet50_trains_an_epoch_on_a_5_class_jpeg_folder_split_by_test_fraction 67
  cli.test_vgg_f_trains_an_epoch_on_3_classes_laid_out_as_traindata_and_validationdata 40)

# Tests declared in CMake take their COST here; those Catch2 discovers after
# the build exist only in ctest's own files, so a file ctest includes after
# discovery's (TEST_INCLUDE_FILES, in order) sets theirs.
set(_costs_file ${CMAKE_CURRENT_BINARY_DIR}/long_test_costs.cmake)
set(_costs "")
list(LENGTH lockstep_long_tests _n)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET lockstep_long_tests ${_i} _name)
  list(GET lockstep_long_tests ${_j} _seconds)
  if(TEST "${_name}")
    set_tests_properties("${_name}" PROPERTIES COST ${_seconds})
  else()
    string(APPEND _costs "set_tests_properties([=[${_name}]=] PROPERTIES COST ${_seconds})\n")
  endif()
endforeach()
file(WRITE ${_costs_file} "${_costs}")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_costs_file})
