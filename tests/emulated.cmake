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

# The steps of `scripts/gpu-check quick` that run on the emulated build
# (tests/build/test_gpu_quick_*.py): compute-sanitizer's four tools played by
# a stand-in (sanitize), the loader's share of an epoch on 1 and 2 devices
# (loader), tv-resnet18 frozen then scaled (finetune). Every `def test_*` of
# each script is a test of its own.
foreach(_step sanitize loader finetune)
  set(_script ${CMAKE_CURRENT_SOURCE_DIR}/build/test_gpu_quick_${_step}.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_script})
  file(STRINGS ${_script} _step_defs REGEX "^    def test_[A-Za-z0-9_]+\\(self\\):")
  file(STRINGS ${_script} _step_class REGEX "^class [A-Za-z]+\\(unittest.TestCase\\):")
  string(REGEX REPLACE "^class ([A-Za-z]+).*" "\\1" _step_class "${_step_class}")
  foreach(_def IN LISTS _step_defs)
    string(REGEX REPLACE "^    def (test_[A-Za-z0-9_]+)\\(self\\):.*" "\\1" _name "${_def}")
    add_test(NAME gpu_check.${_step_class}.${_name} COMMAND /usr/bin/python3 ${_script} ${_step_class}.${_name})
    set_tests_properties(gpu_check.${_step_class}.${_name} PROPERTIES LABELS gpu TIMEOUT 900
      ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR};LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_GPU_TESTS=$<TARGET_FILE:lockstep_gpu_tests>;PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endforeach()
