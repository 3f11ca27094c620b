// The CPU tests' main; Catch2's implementation is in catch_session.cpp.
#include "catch_session.h"

int main(int argc, char** argv) { return run_catch_session(argc, argv); }
