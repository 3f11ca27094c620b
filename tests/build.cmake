# The build's own dependency handling (tests/build/test_build_deps.py): a
# broken optional package is left out under AUTO, and scripts/check-deps
# fails on a library from outside scripts/setup's packages. Labelled build:
# they configure the project and read the package database, the same in
# every flavour, so only the ordinary stage (which runs every label) runs them.
foreach(t OptionalPackages.test_a_broken_onednn_package_is_left_out_with_a_notice_under_auto
          OptionalPackages.test_a_package_config_that_stops_with_an_error_is_left_out_under_auto
          OptionalPackages.test_a_package_config_without_its_target_is_left_out_under_auto
          OptionalPackages.test_a_broken_mpi_is_left_out_with_a_notice_under_auto
          CheckDeps.test_paths_from_setup_packages_pass
          CheckDeps.test_a_library_from_no_package_fails_naming_it
          CheckDeps.test_a_library_from_a_package_setup_does_not_install_fails_naming_the_package)
  add_test(NAME build.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/build/test_build_deps.py ${t})
  set_tests_properties(build.${t} PROPERTIES LABELS build TIMEOUT 300
    ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR};LOCKSTEP_CMAKE=${CMAKE_COMMAND}")
endforeach()

# scripts/stage-budget, which scripts/test runs as each stage ends.
foreach(t test_a_stage_within_its_share_passes test_a_stage_over_its_share_fails_naming_its_slowest_tests_first
          test_the_shares_sum_to_forty_minutes_and_every_stage_has_one test_off_turns_the_check_off)
  add_test(NAME build.StageBudget.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/build/test_stage_budget.py
           StageBudget.${t})
  set_tests_properties(build.StageBudget.${t} PROPERTIES LABELS build TIMEOUT 60
    ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()
