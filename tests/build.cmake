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

# Each test of a Python unittest class in tests/build/SCRIPT as the ctest test
# build.CLASS.TEST: labelled build (the ordinary stage alone runs them), the
# source folder in LOCKSTEP_SOURCE_DIR.
function(lockstep_build_unittests script class)
  foreach(t ${ARGN})
    add_test(NAME build.${class}.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/build/${script} ${class}.${t})
    set_tests_properties(build.${class}.${t} PROPERTIES LABELS build TIMEOUT 60
      ENVIRONMENT "LOCKSTEP_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  endforeach()
endfunction()

# scripts/stage-budget, which scripts/test runs as each stage ends.
lockstep_build_unittests(test_stage_budget.py StageBudget
  test_a_stage_within_its_share_passes test_a_stage_over_its_share_fails_naming_its_slowest_tests_first
  test_the_shares_sum_to_forty_minutes_and_every_stage_has_one test_off_turns_the_check_off)

# What docs/architecture.md says of the sources (the layer table's includes,
# the cuda/ halves, include loops, file sizes, emu/, the batch slice's
# formula), checked on the sources; each rule also on a planted violation.
lockstep_build_unittests(test_source_rules.py SourceRules
  test_the_page_has_a_layer_table_with_an_includes_column
  test_no_include_goes_against_the_layer_table test_a_planted_upward_or_sideways_include_fails_naming_it
  test_no_file_of_a_layer_includes_its_cuda_half_from_outside_it
  test_a_planted_include_of_the_cuda_half_fails_naming_it
  test_the_only_include_loops_are_the_known_ones test_a_planted_loop_fails_naming_its_includes
  test_no_product_source_is_over_600_lines test_a_planted_long_source_fails_naming_it
  test_emu_includes_what_the_page_says test_a_planted_emu_include_fails_naming_it
  test_the_page_gives_the_slice_formula_the_unit_test_checks test_a_page_with_another_slice_formula_fails)

# The library's environment variables: read in base/environment.cpp alone,
# and listed in docs/building.md as its table names them.
lockstep_build_unittests(test_environment.py Environment
  test_only_the_one_reader_reads_lockstep_variables test_a_planted_read_fails_naming_it
  test_the_docs_list_exactly_the_table test_a_variable_missing_from_the_docs_fails)

# How many of the program's files name each `lockstep train` setting as a
# member of TrainSettings (at most three, but a listed few, whose list only
# shrinks; empty now).
lockstep_build_unittests(test_setting_files.py SettingFiles
  test_the_fields_are_read test_no_setting_is_named_in_more_than_three_files_but_the_listed
  test_the_list_of_wider_settings_only_shrinks
  test_a_planted_use_in_a_fourth_file_fails_naming_the_setting_and_files
  test_a_comment_or_message_naming_a_setting_is_not_a_use test_a_listed_setting_that_narrows_must_leave_the_list
  test_a_member_of_another_struct_of_the_same_name_is_not_a_use
  test_a_member_reached_through_the_type_or_an_alias_is_a_use test_a_cpp_file_uses_the_members_its_header_declares)
