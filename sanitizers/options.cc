// The sanitizers' default run-time options, compiled into every executable of a
// ZERODP_SANITIZE build (CMakeLists.txt adds this file to whatever links zerodp_core). Each
// runtime calls its function once at start-up; the environment (ASAN_OPTIONS, ...) still
// overrides any option here. See docs/hardening.md.
//  - ASan: leaks too, use of a stack frame after return (async handles outliving a caller),
//    and the order of static initialisation across files.
//  - UBSan: the first report ends the program (with -fno-sanitize-recover), with its stack.
//  - TSan and LSan: the suppressions beside this file, each entry explained there.
#ifndef ZERODP_SANITIZER_DIR
#error "ZERODP_SANITIZER_DIR: the folder of the suppression files, set by CMakeLists.txt"
#endif

#define ZERODP_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined"), used))

extern "C" {

ZERODP_NO_SANITIZE const char* __asan_default_options() {
  return "detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:"
         "strict_init_order=1";
}

ZERODP_NO_SANITIZE const char* __lsan_default_options() {
  return "suppressions=" ZERODP_SANITIZER_DIR "/lsan.supp";
}

ZERODP_NO_SANITIZE const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:suppressions=" ZERODP_SANITIZER_DIR "/ubsan.supp";
}

ZERODP_NO_SANITIZE const char* __tsan_default_options() {
  return "second_deadlock_stack=1:suppressions=" ZERODP_SANITIZER_DIR "/tsan.supp";
}

}  // extern "C"
