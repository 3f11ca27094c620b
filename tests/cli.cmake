# End-to-end tests of the lockstep program, one CTest entry per test method,
# labelled cpu: tests/cli/test_cli.py reads Debian's Fashion-MNIST;
# tests/cli/test_cli_outputs.py (what train writes and checks before training),
# tests/cli/test_cli_data.py (a checkpoint's data found again),
# tests/cli/test_cli_weights.py (--init and export) and
# tests/cli/test_cli_best.py (--keep-best, --early-stop),
# tests/cli/test_cli_optimizer.py (--optimizer adamw, its state and resume),
# tests/cli/test_cli_ema.py (--ema: its average saved, resumed and evaluated),
# tests/cli/test_cli_inputs.py (what a hostile user hands over: FIFOs, links,
# counts, a cache cut while it is read) and tests/cli/test_cli_onnx.py (export
# --format onnx against OpenCV's dnn module; only when ONNX is built in) make
# their own small data sets.
# Every test method of each script is registered (a method added to a
# script is a CTest entry at the next configure, which the script's change
# triggers), so no test can sit in a script unrun.
function(lockstep_cli_tests script class)
  set(_path ${CMAKE_CURRENT_SOURCE_DIR}/cli/${script})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_path})
  file(STRINGS ${_path} _defs REGEX "^    def test_[A-Za-z0-9_]+\\(self\\):")
  if(NOT _defs)
    message(FATAL_ERROR "tests/cli.cmake: no test methods found in ${_path}")
  endif()
  foreach(_def ${_defs})
    string(REGEX REPLACE "^    def (test_[A-Za-z0-9_]+)\\(self\\):.*" "\\1" t "${_def}")
    add_test(NAME cli.${t} COMMAND /usr/bin/python3 ${_path} ${class}.${t})
    set_tests_properties(cli.${t} PROPERTIES LABELS cpu ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;PYTHONDONTWRITEBYTECODE=1"
                         TIMEOUT 600)
  endforeach()
endfunction()

lockstep_cli_tests(test_cli.py Cli)
lockstep_cli_tests(test_cli_outputs.py CliOutputs)
lockstep_cli_tests(test_cli_arguments.py CliArguments)
lockstep_cli_tests(test_cli_data.py CliData)
lockstep_cli_tests(test_cli_cache.py CliCache)
lockstep_cli_tests(test_cli_weights.py CliWeights)
lockstep_cli_tests(test_cli_inputs.py CliInputs)
lockstep_cli_tests(test_cli_best.py CliBest)
lockstep_cli_tests(test_cli_optimizer.py CliOptimizer)
lockstep_cli_tests(test_cli_ema.py CliEma)
if(LOCKSTEP_WITH_ONNX)
  lockstep_cli_tests(test_cli_onnx.py CliOnnx)
endif()
