# Smoke tests of lockstep-bench (bench/suite/): every suite with
# `--devices cpu --quick` must print a Markdown table, write its JSON (machine,
# versions, settings, rows) and draw a non-empty PNG. They check what comes
# out, never how fast: the numbers of a shared machine are not a test.
if(NOT LOCKSTEP_BUILD_BENCH)
  return()
endif()

# Without gnuplot the suites leave the PNG out and say why; the tests then check that instead.
find_program(LOCKSTEP_GNUPLOT gnuplot)
set(_bench_png_flag "")
if(NOT LOCKSTEP_GNUPLOT)
  message(STATUS "gnuplot not found: the lockstep-bench smoke tests do not ask for PNGs")
  set(_bench_png_flag --no-png)
endif()

set(_bench_smoke_dir ${CMAKE_CURRENT_BINARY_DIR}/bench_smoke)
foreach(_suite scaling projection batch-sweep envs allreduce kernels peers roofline profile)
  add_test(NAME bench.${_suite}
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/bench/suite/smoke_check.py
                   $<TARGET_FILE:lockstep_bench> ${_suite} ${_bench_smoke_dir} ${_bench_png_flag})
  # RUN_SERIAL: the suites time things; two at once would only slow each other down.
  set_tests_properties(bench.${_suite} PROPERTIES LABELS cpu TIMEOUT 180 RUN_SERIAL TRUE
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endforeach()

# The profile's plumbing on the emulated GPU (its figures mean nothing there):
# CUDA events as the marks, the device's step, a bound from a GPU the
# emulator is not. Labelled gpu, so scripts/test runs it in the emulated
# passes, under their scheduling orders.
if(LOCKSTEP_GPU STREQUAL "emulated")
  add_test(NAME bench.profile_emulated_gpu
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/bench/suite/smoke_check.py
                   $<TARGET_FILE:lockstep_bench> profile ${_bench_smoke_dir}/emulated ${_bench_png_flag} --devices 0)
  set_tests_properties(bench.profile_emulated_gpu PROPERTIES LABELS gpu TIMEOUT 300 RUN_SERIAL TRUE
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
