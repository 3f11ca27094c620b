#pragma once
// Runs Catch2's session with the command line: Catch::Session is only
// declared where the implementation is compiled (catch_session.cpp), so the
// test executables' main()s call this instead.
int run_catch_session(int argc, char** argv);
