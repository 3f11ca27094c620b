# The installed package: cmake --install into the build tree, build the
# example program (apps/example, its own CMake project) against it with
# find_package(Lockstep), and run it for a few steps. The example is compiled
# with this build's flags, so a sanitizer build links its instrumented package.
set(_prefix ${CMAKE_BINARY_DIR}/package-test/install)
set(_example_build ${CMAKE_BINARY_DIR}/package-test/example)
add_test(NAME package.install
         COMMAND ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix ${_prefix})
add_test(NAME package.build_example
         COMMAND sh -c "rm -rf '${_example_build}' && '${CMAKE_COMMAND}' -S '${PROJECT_SOURCE_DIR}/apps/example' -B '${_example_build}' -DCMAKE_PREFIX_PATH='${_prefix}' -DCMAKE_BUILD_TYPE=Release '-DCMAKE_CXX_FLAGS=${CMAKE_CXX_FLAGS}' '-DCMAKE_EXE_LINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}' >/dev/null && '${CMAKE_COMMAND}' --build '${_example_build}'")
add_test(NAME package.run_example COMMAND ${_example_build}/train_fashion_mnist 20)
set_tests_properties(package.install PROPERTIES LABELS cpu FIXTURES_SETUP lockstep_installed)
set_tests_properties(package.build_example PROPERTIES LABELS cpu FIXTURES_REQUIRED lockstep_installed
                     FIXTURES_SETUP lockstep_example TIMEOUT 900)
set_tests_properties(package.run_example PROPERTIES LABELS cpu FIXTURES_REQUIRED lockstep_example
                     PASS_REGULAR_EXPRESSION "trainer stopped after 40 steps.*test accuracy [0-9]")
