# Tests against PyTorch (Debian's python3-torch, CPU). PyTorch's results for
# the C++ tests tagged [torch] are stored in tests/golden, so those tests run in
# every stage as ordinary test cases, with no Python. Where torch is
# installed, a fixture test runs tests/torch/make_references.py, which writes
# the same results anew into the build tree; torch_references_match_stored
# checks that the stored files are what the script makes, and the [torch]
# cases run once more on the new files, one CTest entry per group, with the
# directory in LOCKSTEP_TORCH_REFERENCES.
#
# Debian's torch lives in the system interpreter, which need not be the
# python3 first on PATH; LOCKSTEP_TORCH_PYTHON picks another.
set(LOCKSTEP_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH "Python interpreter that can import torch (tests against PyTorch)")

if(NOT DEFINED LOCKSTEP_TORCH_FOUND OR NOT LOCKSTEP_TORCH_FOUND_FOR STREQUAL LOCKSTEP_TORCH_PYTHON)
  set(_torch_ok FALSE)
  if(EXISTS ${LOCKSTEP_TORCH_PYTHON})
    execute_process(COMMAND ${LOCKSTEP_TORCH_PYTHON} -c "import torch"
                    RESULT_VARIABLE _torch_rc OUTPUT_QUIET ERROR_QUIET)
    if(_torch_rc EQUAL 0)
      set(_torch_ok TRUE)
    endif()
  endif()
  set(LOCKSTEP_TORCH_FOUND ${_torch_ok} CACHE INTERNAL "")
  set(LOCKSTEP_TORCH_FOUND_FOR ${LOCKSTEP_TORCH_PYTHON} CACHE INTERNAL "")
endif()

if(NOT LOCKSTEP_TORCH_FOUND)
  message(STATUS "PyTorch: ${LOCKSTEP_TORCH_PYTHON} cannot import torch; the tests against PyTorch are not registered")
  return()
endif()
message(STATUS "PyTorch: ${LOCKSTEP_TORCH_PYTHON} (tests against PyTorch registered)")

set(_torch_refs ${CMAKE_CURRENT_BINARY_DIR}/torch_references)
add_test(NAME torch_references
         COMMAND ${LOCKSTEP_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/make_references.py ${_torch_refs})
# No __pycache__ written into the source tree.
set_tests_properties(torch_references PROPERTIES FIXTURES_SETUP torch_refs LABELS cpu TIMEOUT 120
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# Another PyTorch build may differ in the last bits: tests/torch/check_references.py
# says how far the stored files may be from the regenerated ones.
add_test(NAME torch_references_match_stored
         COMMAND ${LOCKSTEP_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/check_references.py
                 ${CMAKE_CURRENT_SOURCE_DIR}/golden ${_torch_refs})
set_tests_properties(torch_references_match_stored PROPERTIES FIXTURES_REQUIRED torch_refs LABELS cpu TIMEOUT 120
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# --warn NoTests: a tag that matches nothing (a renamed test) fails instead of passing.
foreach(_group ops golden)
  add_test(NAME torch_${_group} COMMAND lockstep_cpu_tests "[torch][${_group}]" --warn NoTests)
  set_tests_properties(torch_${_group} PROPERTIES
    FIXTURES_REQUIRED torch_refs LABELS cpu TIMEOUT 300
    ENVIRONMENT "LOCKSTEP_TORCH_REFERENCES=${_torch_refs}")
endforeach()

# torchvision's resnet18, resnet50 and vgg16 loaded with --init's loader and
# exported back (tests/torch/pretrained_oracle.py, tests/cpu/test_pretrained.cpp):
# the script writes their state dicts and logits, the [torch][pretrained] cases
# compare ours and write checkpoints, the script exports those with `lockstep
# export` and loads them strictly into torchvision. Some 1.5 GB of files
# (vgg16's), removed at the end. Needs Debian's python3-torchvision.
execute_process(COMMAND ${LOCKSTEP_TORCH_PYTHON} -c "import torchvision"
                RESULT_VARIABLE _torchvision_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT _torchvision_rc EQUAL 0)
  message(STATUS "torchvision: ${LOCKSTEP_TORCH_PYTHON} cannot import it; the pretrained-weights tests are not registered")
  return()
endif()
set(_pretrained ${CMAKE_CURRENT_BINARY_DIR}/torch_pretrained)
set(_oracle ${CMAKE_CURRENT_SOURCE_DIR}/torch/pretrained_oracle.py)
add_test(NAME torch_pretrained_write COMMAND ${LOCKSTEP_TORCH_PYTHON} ${_oracle} write ${_pretrained})
set_tests_properties(torch_pretrained_write PROPERTIES FIXTURES_SETUP torch_pretrained LABELS cpu TIMEOUT 300
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
add_test(NAME torch_pretrained COMMAND lockstep_cpu_tests "[torch][pretrained]" --warn NoTests)
set_tests_properties(torch_pretrained PROPERTIES FIXTURES_REQUIRED torch_pretrained
  FIXTURES_SETUP torch_pretrained_checkpoints LABELS cpu TIMEOUT 300
  ENVIRONMENT "LOCKSTEP_TORCH_PRETRAINED=${_pretrained}")
add_test(NAME torch_pretrained_export COMMAND ${LOCKSTEP_TORCH_PYTHON} ${_oracle} check ${_pretrained})
set_tests_properties(torch_pretrained_export PROPERTIES
  FIXTURES_REQUIRED "torch_pretrained;torch_pretrained_checkpoints" LABELS cpu TIMEOUT 300
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>")
add_test(NAME torch_pretrained_cleanup COMMAND ${CMAKE_COMMAND} -E rm -rf ${_pretrained})
set_tests_properties(torch_pretrained_cleanup PROPERTIES FIXTURES_CLEANUP torch_pretrained LABELS cpu)
