# End-to-end tests of the lockstep program (tests/cli/test_cli.py), one CTest
# entry per test method, labelled cpu. They read Debian's Fashion-MNIST.
set(_cli_tests
  test_train_then_eval_agree
  test_eval_matches_trainer_exactly_on_the_same_data
  test_resume_after_sigint_gives_the_same_losses
  test_damaged_checkpoints_are_refused
  test_checkpoint_loads_in_python
  test_checkpoint_of_3_replicas_evaluates_and_resumes_on_1
  test_predict_prints_the_top_classes
  test_bad_arguments_fail_in_one_line_and_leave_the_checkpoint)
foreach(t ${_cli_tests})
  add_test(NAME cli.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.py Cli.${t})
  set_tests_properties(cli.${t} PROPERTIES LABELS cpu ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>"
                       TIMEOUT 600)
endforeach()
